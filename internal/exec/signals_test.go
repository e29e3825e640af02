package exec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spawnAndReportSignals is a helper that shows what its children inherit:
// it prints its own SigIgn and SigBlk, then, through a reaper and a manager
// as the server has, a child's, then sends SIGHUP and SIGINT to two children
// and prints how each ended.
func spawnAndReportSignals() int {
	own, _ := os.ReadFile("/proc/self/status")
	fmt.Print("helper ", strings.Join(sigLines(string(own)), " "), "\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := NewReaper(ctx, ReaperOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m := NewManager(Options{Reaper: r, Grace: 300 * time.Millisecond})
	p, err := m.Run(ctx, Spec{Argv: []string{"/bin/cat", "/proc/self/status"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Print("child ", strings.Join(sigLines(string(p.Result().Stdout.Data)), " "), "\n")
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
		// The timeout ends a child that the signal did not.
		p, err := m.Start(Spec{Argv: []string{"/bin/sleep", "60"}, Timeout: 5 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		p.Signal(sig)
		r := p.Result()
		fmt.Println(unix.SignalName(sig), r.Status, r.Signal)
	}
	return 0
}

// sigLines returns the SigBlk and SigIgn lines of a /proc status, without
// signals 32 to 34: libc and the Go runtime reserve them, no Go program can
// change their disposition, and some parents hand them on ignored (GNU make
// ignores 32 and 33, so `make test` starts every test that way).
func sigLines(status string) []string {
	lines := regexp.MustCompile(`(?m)^Sig(Ign|Blk):\s*\S+`).FindAllString(status, -1)
	for i, line := range lines {
		name, mask, _ := strings.Cut(line, "\t")
		if v, err := strconv.ParseUint(mask, 16, 64); err == nil {
			lines[i] = fmt.Sprintf("%s\t%016x", name, v&^reservedSignals)
		}
	}
	return lines
}

// reservedSignals masks signals 32, 33 and 34 in a /proc signal set.
const reservedSignals = 0b111 << 31

// TestChildrenStartWithDefaultSignals starts the helper as nohup and a shell's
// trap would, SIGHUP and SIGINT ignored (and the job-control signals, which
// the runtime leaves alone too), and with SIGUSR1 and SIGUSR2 blocked: its
// children still start with no signal ignored or blocked, and die of SIGHUP
// and SIGINT.
func TestChildrenStartWithDefaultSignals(t *testing.T) {
	spec := helperSpec(t, "spawn-and-report-signals")
	cmd := exec.Command("/bin/sh", "-c", `trap '' HUP INT CONT TSTP TTIN TTOU; exec "$0"`, spec.Argv[0])
	cmd.Env = spec.Env
	// No controlling terminal, as a daemon has: with one, SIGTTIN and SIGTTOU
	// stay as inherited (signals.go).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// The child starts with the mask of the thread that forks it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var block, old unix.Sigset_t
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2} {
		block.Val[(sig-1)/64] |= 1 << ((sig - 1) % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &block, &old); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{
		"helper SigBlk:\t0000000000000a00 SigIgn:\t00000000003a0003", // the setup took: USR1 and USR2 blocked; HUP, INT, CONT, TSTP, TTIN, TTOU ignored
		"child SigBlk:\t0000000000000000 SigIgn:\t0000000000000000",
		"SIGHUP signaled SIGHUP",
		"SIGINT signaled SIGINT",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("helper started with HUP and INT ignored, USR1 and USR2 blocked reported:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}
