package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ttyInfo prints what a process on a terminal should see of it: its
// descriptors are terminals, it leads its session and its group, and its
// group is the terminal's foreground group.
func ttyInfo() int {
	for fd := range 3 {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		fmt.Printf("fd%d-tty=%t\n", fd, err == nil)
	}
	pid := os.Getpid()
	sid, _ := unix.Getsid(0)
	fg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	fmt.Printf("session-leader=%t group-leader=%t foreground=%t\n", sid == pid, syscall.Getpgrp() == pid, fg == pid)
	return 0
}

// reportWinch prints the terminal's size on every SIGWINCH.
func reportWinch() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH)
	fmt.Println("ready")
	for range sigs {
		ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Printf("winch %d %d\n", ws.Row, ws.Col)
	}
	return 0
}

// foregroundJob starts sleep (its path) in a group of its own in the terminal's
// foreground, as a job-control shell runs a job, prints its pid and how it
// ended. It survives a SIGINT sent to its own group only if it ignores it:
// it does not, so a signal that reaches the wrong group ends it.
func foregroundJob(sleep string) int {
	cmd := exec.Command(sleep, "100")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Printf("job %d\n", cmd.Process.Pid)
	err := cmd.Wait()
	// Take the terminal back, as a shell does once its job has ended.
	signal.Ignore(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, syscall.Getpgrp())
	fmt.Printf("job ended: %v\n", err)
	return 0
}

func ttySpec(spec Spec, cols, rows uint16) Spec {
	spec.TTY = &TTYSize{Cols: cols, Rows: rows}
	return spec
}

func TestTTYSpawn(t *testing.T) {
	m := testManager()
	p := startProcess(t, m, ttySpec(helperSpec(t, "tty-info"), 80, 24))
	<-p.Done()
	res := p.Result()
	out := strings.ReplaceAll(string(res.Stdout.Data), "\r\n", "\n")
	want := "fd0-tty=true\nfd1-tty=true\nfd2-tty=true\nsession-leader=true group-leader=true foreground=true\n"
	if out != want || res.Status != StatusExited {
		t.Errorf("tty-info on a terminal = %s %q, want exited %q", res.Status, out, want)
	}
	chunks := readAll(t, p, 0)
	for _, c := range chunks {
		if c.Stream != Pty {
			t.Errorf("chunk %d stream = %q, want %q", c.Seq, c.Stream, Pty)
		}
	}
	if info := p.Info(); info.TTY == nil || *info.TTY != (TTYSize{80, 24}) || !info.PipeStdin {
		t.Errorf("Info() TTY = %v PipeStdin = %t, want {80 24} true", info.TTY, info.PipeStdin)
	}
}

// TestTTYMatchesARealTerminal runs the same commands on a process's terminal
// and on a terminal the test opens itself with creack/pty.
func TestTTYMatchesARealTerminal(t *testing.T) {
	m := testManager()
	for _, script := range []string{
		"stty size; tty >/dev/null && echo tty",
		"printf 'out\\n'; printf 'err\\n' >&2; printf 'a\\tb\\n'",
		"stty -a | head -n 1 | cut -d';' -f2-3",
	} {
		argv := []string{"sh", "-c", script}
		got := run(t, m, ttySpec(Spec{Argv: argv, Env: []string{"PATH=" + os.Getenv("PATH")}}, 132, 43))

		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 132, Rows: 43})
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			want.Write(buf[:n])
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		_ = f.Close()
		if string(got.Stdout.Data) != want.String() || len(got.Stderr.Data) != 0 {
			t.Errorf("%q on a process's terminal = %q (stderr %q), on a real terminal %q", script, got.Stdout.Data, got.Stderr.Data, want.String())
		}
	}
}

func TestTTYResizeSendsSIGWINCH(t *testing.T) {
	m := testManager()
	p := startProcess(t, m, ttySpec(helperSpec(t, "winch"), 80, 24))
	readUntil(t, p, "ready")
	if err := p.Resize(TTYSize{Cols: 100, Rows: 40}); err != nil {
		t.Fatalf("Resize error %v", err)
	}
	readUntil(t, p, "winch 40 100")
	if info := p.Info(); *info.TTY != (TTYSize{100, 40}) {
		t.Errorf("Info().TTY after Resize = %v, want {100 40}", *info.TTY)
	}

	q := startProcess(t, m, Spec{Argv: []string{"sleep", "10"}})
	if err := q.Resize(TTYSize{Cols: 1, Rows: 1}); !errors.Is(err, ErrNotATTY) {
		t.Errorf("Resize of a process without a terminal = %v, want ErrNotATTY", err)
	}
}

func TestTTYSttySizeAfterResize(t *testing.T) {
	m := testManager()
	p := startProcess(t, m, ttySpec(Spec{Argv: []string{"sh"}, Env: []string{"PATH=" + os.Getenv("PATH"), "PS1=$ "}}, 80, 24))
	if err := p.Resize(TTYSize{Cols: 120, Rows: 50}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteStdin(context.Background(), []byte("stty size\nexit\n"), "", false); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if out := string(p.Result().Stdout.Data); !strings.Contains(out, "50 120\r\n") {
		t.Errorf("stty size after Resize(120x50) printed %q, want 50 120", out)
	}
}

func TestTTYCtrlCInterrupts(t *testing.T) {
	m := testManager()
	p := startProcess(t, m, ttySpec(Spec{Argv: []string{"sleep", "100"}}, 80, 24))
	if _, err := p.WriteStdin(context.Background(), []byte{0x03}, "", false); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if res := p.Result(); res.Status != StatusSignaled || res.Signal != "SIGINT" {
		t.Errorf("sleep after Ctrl-C = %s %s, want signaled SIGINT", res.Status, res.Signal)
	}
}

func TestTTYSignalReachesTheForegroundGroup(t *testing.T) {
	m := testManager()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, m, ttySpec(helperSpec(t, "foreground-job", sleep), 80, 24))
	out := readUntil(t, p, "job ")
	job, _ := strconv.Atoi(regexp.MustCompile(`job (\d+)`).FindStringSubmatch(out)[1])
	// The job is in the foreground once the leader has made it so: wait for it.
	waitFor(t, "the job in the foreground", func() bool { return p.tty.foreground() == job })
	if !p.Signal(syscall.SIGINT) {
		t.Fatal("Signal(SIGINT) = false, want delivered")
	}
	readUntil(t, p, "job ended: signal: interrupt")
	<-p.Done()
	if res := p.Result(); res.Status != StatusExited {
		t.Errorf("the job's leader = %s %s, want exited: the signal must reach the foreground job, not the leader", res.Status, res.Signal)
	}
}

func TestTTYExitAndArg0(t *testing.T) {
	m := testManager()
	res := run(t, m, ttySpec(Spec{Argv: []string{"sh", "-c", "printf hi; printf ' there' >&2; exit 3"}}, 80, 24))
	if res.Status != StatusExited || res.ExitCode == nil || *res.ExitCode != 3 || string(res.Stdout.Data) != "hi there" || res.Stdout.Total != 8 {
		t.Errorf("exit 3 on a terminal = %s %v %q (%d bytes), want exited 3 \"hi there\" (8)", res.Status, fmtCode(res.ExitCode), res.Stdout.Data, res.Stdout.Total)
	}
	for _, spec := range []Spec{helperSpec(t, "arg0"), ttySpec(helperSpec(t, "arg0"), 80, 24)} {
		spec.Arg0 = "-custom"
		if got := strings.TrimSpace(string(run(t, m, spec).Stdout.Data)); got != "-custom" {
			t.Errorf("argv[0] with Arg0 -custom (tty %t) = %q", spec.TTY != nil, got)
		}
	}
}

// TestTTYWritesAreBackPressured: a client that types faster than the
// terminal's reader reads is held back by the terminal's buffers, not
// buffered without bound.
func TestTTYWritesAreBackPressured(t *testing.T) {
	m := testManager()
	p := startProcess(t, m, ttySpec(Spec{Argv: []string{"sleep", "100"}}, 80, 24))
	data := []byte(strings.Repeat("0123456789abcdef\n", 1<<16)) // about 1 MiB
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	w, err := p.WriteStdin(ctx, data, "", false)
	if !errors.Is(err, context.DeadlineExceeded) || w.Written >= len(data) {
		t.Errorf("1 MiB to a terminal nobody reads wrote %d bytes, error %v; want fewer, and the deadline", w.Written, err)
	}
}

// TestTTYEndingLeavesNoJob: an interactive shell ignores SIGTERM, may
// ignore a SIGHUP that comes while it sets up its prompt, and runs its jobs
// in groups of their own; however the shell ends (terminated, or its user
// types exit), what it leaves in its session is hung up and ended, as no
// process of a request outlives it: a job that ignores SIGHUP and SIGTERM
// too, killed after the grace.
func TestTTYEndingLeavesNoJob(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	m := testManager()
	for _, c := range []struct{ end, job string }{
		{"terminate", "sleep 1000 &"},
		{"exit", "sleep 1000 &"},
		{"terminate", "(trap '' HUP TERM; exec sleep 1000) &"},
		{"exit", "(trap '' HUP TERM; exec sleep 1000) &"},
	} {
		end := c.end
		t.Run(end+" "+c.job, func(t *testing.T) {
			p := startProcess(t, m, ttySpec(Spec{Argv: []string{"bash", "--norc", "--noprofile", "-i"}, Env: []string{"PATH=" + os.Getenv("PATH"), "PS1=$ "}}, 80, 24))
			if _, err := p.WriteStdin(context.Background(), []byte(c.job+" echo JOB=$!\n"), "", false); err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(readMatch(t, p, regexp.MustCompile(`JOB=(\d+)\r`)))
			if !pidAlive(pid) {
				t.Fatalf("job %d is not running", pid)
			}
			if end == "exit" {
				if _, err := p.WriteStdin(context.Background(), []byte("exit\n"), "", false); err != nil {
					t.Fatal(err)
				}
			} else {
				p.Terminate(StatusTerminated)
			}
			<-p.Done()
			waitFor(t, "the job to end", func() bool { return !pidAlive(pid) })
		})
	}
}

// readMatch reads p's output until re matches it, and returns its first group.
func readMatch(t *testing.T, p *Process, re *regexp.Regexp) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out strings.Builder
	after := int64(0)
	for {
		r, err := p.Read(ctx, after, 0, time.Second)
		if err != nil {
			t.Fatalf("Read(%d) waiting for %s in %q: %v", after, re, out.String(), err)
		}
		for _, c := range r.Chunks {
			out.Write(c.Data)
		}
		after = r.NextSeq - 1
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		if r.Closed {
			t.Fatalf("output closed without %s: %q", re, out.String())
		}
	}
}

// TestTTYLimits: a process on a terminal counts against MaxRunning, and its
// timeouts end it as any process's do.
func TestTTYLimits(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, MaxRunning: 1})
	p := startProcess(t, m, ttySpec(Spec{Argv: []string{"sleep", "100"}}, 80, 24))
	if _, err := m.Start(ttySpec(Spec{Argv: []string{"sleep", "100"}}, 80, 24)); !errors.Is(err, ErrTooManyProcesses) {
		t.Errorf("a second terminal beyond MaxRunning 1: %v, want ErrTooManyProcesses", err)
	}
	p.Terminate(StatusTerminated)
	<-p.Done()
	for _, tt := range []struct {
		spec Spec
		want Status
	}{
		{Spec{Argv: []string{"sleep", "100"}, Timeout: 50 * time.Millisecond}, StatusTimedOut},
		{Spec{Argv: []string{"sh", "-c", "echo a; sleep 100"}, IdleTimeout: 100 * time.Millisecond}, StatusIdleTimeout},
	} {
		if got := run(t, m, ttySpec(tt.spec, 80, 24)); got.Status != tt.want {
			t.Errorf("%q on a terminal = %s, want %s", tt.spec.Argv, got.Status, tt.want)
		}
	}
}
