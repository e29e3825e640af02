package exec

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The test binary re-runs itself as the children these tests need (the os/exec
// helper-process pattern): SNAPEXEC_HELPER names the behaviour.
const helperVar = "SNAPEXEC_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperVar); mode != "" {
		os.Exit(helperMain(mode, os.Args[1:]))
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := Reap(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "subreaper:", err)
	}
	code := m.Run()
	cancel()
	os.Exit(code)
}

func helperMain(mode string, args []string) int {
	switch mode {
	case "ignore-term":
		// Ignores SIGTERM, so only the group SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "grandchild":
		// Starts a grandchild that ignores SIGTERM and shares our stdout, prints
		// its pid, then sleeps (or exits at once with "exit" as first argument).
		self, _ := os.Executable()
		attr := &os.ProcAttr{
			Env:   []string{helperVar + "=ignore-term"},
			Files: []*os.File{nil, os.Stdout, os.Stderr},
		}
		gc, err := os.StartProcess(self, []string{self}, attr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(gc.Pid)
		if len(args) > 0 && args[0] == "exit" {
			return 0
		}
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
	case "print-slowly":
		n, _ := strconv.Atoi(args[0])
		every, _ := time.ParseDuration(args[1])
		for i := range n {
			fmt.Println(i)
			time.Sleep(every)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	return 0
}

// helperSpec returns a spec that runs the test binary as the helper mode.
func helperSpec(t *testing.T, mode string, args ...string) Spec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Argv: append([]string{self}, args...), Env: []string{helperVar + "=" + mode}}
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] != 'Z'
		}
	}
	return true
}
