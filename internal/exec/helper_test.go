package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-runs itself as the children these tests need (the os/exec
// helper-process pattern): SNAPEXEC_HELPER names the behaviour.
const helperVar = "SNAPEXEC_HELPER"

// noExitSleep spares a helper built with -race the race runtime's one-second
// sleep at exit.
const noExitSleep = "GORACE=atexit_sleep_ms=0"

// testReaper reaps the orphans of the whole test binary and tells its keeper
// of every group, as the server's does.
var testReaper *Reaper

func TestMain(m *testing.M) {
	if os.Getenv(KeeperEnv) != "" {
		// StartKeeper re-runs this binary as its keeper.
		_ = RunKeeper(os.Stdin, os.Args[1:])
		os.Exit(0)
	}
	if mode := os.Getenv(helperVar); mode != "" {
		os.Exit(helperMain(mode, os.Args[1:]))
	}
	ctx, cancel := context.WithCancel(context.Background())
	keeper, err := StartKeeper(nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keeper:", err)
	}
	if testReaper, err = NewReaper(ctx, ReaperOptions{Keeper: keeper}); err != nil {
		fmt.Fprintln(os.Stderr, "subreaper:", err)
	}
	code := m.Run()
	cancel()
	_ = keeper.Close()
	os.Exit(code)
}

func helperMain(mode string, args []string) int {
	switch mode {
	case "stdio-flags":
		// Prints whether each of its stdio descriptors is non-blocking, then
		// waits to be ended.
		for fd := range 3 {
			fmt.Println(fd, nonblocking(fd))
		}
		time.Sleep(time.Hour)
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
			Env:   []string{helperVar + "=ignore-term", noExitSleep},
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
	case "interleave":
		// Alternates lines on stdout and stderr; each os.File write is a
		// write(2) of its own, so nothing is buffered across the two.
		n, _ := strconv.Atoi(args[0])
		for i := range n {
			fmt.Fprintf(os.Stdout, "o%d\n", i)
			fmt.Fprintf(os.Stderr, "e%d\n", i)
		}
	case "cat":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "count-stdin-on-usr1":
		// Reads nothing until SIGUSR1, then counts stdin to EOF.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGUSR1)
		fmt.Println("ready")
		<-sigs
		n, err := io.Copy(io.Discard, os.Stdin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(n)
	case "print-after":
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
		fmt.Println("late")
		time.Sleep(time.Hour)
	case "signal-tree":
		// Starts a grandchild in our group; both report the first SIGHUP or
		// SIGINT they get, and we exit once the grandchild has.
		self, _ := os.Executable()
		attr := &os.ProcAttr{
			Env:   []string{helperVar + "=report-signal", noExitSleep},
			Files: []*os.File{nil, os.Stdout, os.Stderr},
		}
		gc, err := os.StartProcess(self, []string{self, "grandchild"}, attr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		code := reportSignal("child")
		if st, err := gc.Wait(); err != nil || !st.Success() {
			fmt.Fprintln(os.Stderr, "grandchild:", st, err)
			return 1
		}
		return code
	case "report-signal":
		return reportSignal(args[0])
	case "mini-server":
		return miniServer()
	case "spawn-and-report-signals":
		return spawnAndReportSignals()
	case "tty-info":
		return ttyInfo()
	case "winch":
		return reportWinch()
	case "foreground-job":
		return foregroundJob(args[0])
	case "arg0":
		fmt.Println(os.Args[0])
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	return 0
}

// reportSignal prints "ready <name>", waits for SIGHUP or SIGINT, and prints
// "<name> got <signal>".
func reportSignal(name string) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT)
	fmt.Println("ready", name)
	select {
	case sig := <-sigs:
		fmt.Println(name, "got", unix.SignalName(sig.(syscall.Signal)))
		return 0
	case <-time.After(time.Minute):
		return 1
	}
}

// helperSpec returns a spec that runs the test binary as the helper mode.
func helperSpec(t *testing.T, mode string, args ...string) Spec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Argv: append([]string{self}, args...), Env: []string{helperVar + "=" + mode, noExitSleep}}
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

// nonblocking says whether fd is "blocking" or "non-blocking".
func nonblocking(fd int) string {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	switch {
	case err != nil:
		return err.Error()
	case flags&unix.O_NONBLOCK != 0:
		return "non-blocking"
	}
	return "blocking"
}
