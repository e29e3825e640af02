package exec

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func testManager() *Manager {
	return NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond})
}

func run(t *testing.T, m *Manager, spec Spec) Result {
	t.Helper()
	p, err := m.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q) error %v", spec.Argv, err)
	}
	return p.Result()
}

func TestRunEndings(t *testing.T) {
	m := testManager()
	code := func(c int) *int { return &c }
	tests := []struct {
		name       string
		spec       Spec
		wantStatus Status
		wantCode   *int
		wantSignal string
		wantStdout string
		wantStderr string
	}{
		{"echo", Spec{Argv: []string{"echo", "hi"}}, StatusExited, code(0), "", "hi\n", ""},
		{"exit code", Spec{Argv: []string{"sh", "-c", "exit 3"}}, StatusExited, code(3), "", "", ""},
		{"stderr", Spec{Argv: []string{"sh", "-c", "echo err >&2"}}, StatusExited, code(0), "", "", "err\n"},
		{"stdin", Spec{Argv: []string{"cat"}, Stdin: []byte("typed\n")}, StatusExited, code(0), "", "typed\n", ""},
		{"no stdin is /dev/null", Spec{Argv: []string{"cat"}}, StatusExited, code(0), "", "", ""},
		{"signaled", Spec{Argv: []string{"sh", "-c", "kill -9 $$"}}, StatusSignaled, nil, "SIGKILL", "", ""},
		{"env is exact", Spec{Argv: []string{"/usr/bin/env"}, Env: []string{"ONLY=1"}}, StatusExited, code(0), "", "ONLY=1\n", ""},
		{"cwd", Spec{Argv: []string{"pwd"}, Dir: "/tmp"}, StatusExited, code(0), "", "/tmp\n", ""},
		{"timeout", Spec{Argv: []string{"sleep", "10"}, Timeout: 50 * time.Millisecond}, StatusTimedOut, nil, "SIGTERM", "", ""},
		{"idle timeout", Spec{Argv: []string{"sh", "-c", "echo a; sleep 10"}, IdleTimeout: 100 * time.Millisecond}, StatusIdleTimeout, nil, "SIGTERM", "a\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, m, tt.spec)
			if got.Status != tt.wantStatus {
				t.Errorf("Run(%q).Status = %q, want %q", tt.spec.Argv, got.Status, tt.wantStatus)
			}
			if (got.ExitCode == nil) != (tt.wantCode == nil) || (got.ExitCode != nil && *got.ExitCode != *tt.wantCode) {
				t.Errorf("Run(%q).ExitCode = %v, want %v", tt.spec.Argv, fmtCode(got.ExitCode), fmtCode(tt.wantCode))
			}
			if got.Signal != tt.wantSignal {
				t.Errorf("Run(%q).Signal = %q, want %q", tt.spec.Argv, got.Signal, tt.wantSignal)
			}
			if string(got.Stdout.Data) != tt.wantStdout || string(got.Stderr.Data) != tt.wantStderr {
				t.Errorf("Run(%q) output = %q, %q, want %q, %q", tt.spec.Argv, got.Stdout.Data, got.Stderr.Data, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func fmtCode(c *int) string {
	if c == nil {
		return "nil"
	}
	return strconv.Itoa(*c)
}

func TestStartErrors(t *testing.T) {
	m := testManager()
	tests := []struct {
		name string
		spec Spec
		want error
	}{
		{"empty argv", Spec{}, ErrEmptyArgv},
		{"empty program", Spec{Argv: []string{""}}, ErrEmptyArgv},
		{"missing program", Spec{Argv: []string{"no-such-program-here"}}, ErrSpawn},
		{"missing path", Spec{Argv: []string{"/no/such/program"}}, ErrSpawn},
		{"not executable", Spec{Argv: []string{"/etc/passwd"}}, ErrSpawn},
		{"program is a directory", Spec{Argv: []string{"/tmp"}}, ErrSpawn},
		{"missing cwd", Spec{Argv: []string{"true"}, Dir: "/no/such/dir"}, ErrCwdNotFound},
		{"cwd is a file", Spec{Argv: []string{"true"}, Dir: "/etc/passwd"}, ErrCwdNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Start(tt.spec)
			if !errors.Is(err, tt.want) {
				t.Errorf("Start(%q) error = %v, want %v", tt.spec.Argv, err, tt.want)
			}
		})
	}
}

func TestPathLookupUsesChildPath(t *testing.T) {
	m := testManager()
	if _, err := m.Start(Spec{Argv: []string{"true"}, Env: []string{"PATH=/nonexistent"}}); !errors.Is(err, ErrSpawn) {
		t.Errorf("Start(true) with PATH=/nonexistent error = %v, want ErrSpawn", err)
	}
	if got := run(t, m, Spec{Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}}); got.Status != StatusExited {
		t.Errorf("Run(true) with PATH=/usr/bin:/bin = %q, want exited", got.Status)
	}
}

func TestBinaryOutputKeptExactly(t *testing.T) {
	m := testManager()
	got := run(t, m, Spec{Argv: []string{"printf", `\377\000\001abc`}})
	if want := []byte{0xff, 0, 1, 'a', 'b', 'c'}; !bytes.Equal(got.Stdout.Data, want) {
		t.Errorf("Stdout = %v, want %v", got.Stdout.Data, want)
	}
}

func TestMaxOutputKeepsHeadAndTail(t *testing.T) {
	m := testManager()
	got := run(t, m, Spec{Argv: []string{"sh", "-c", "printf 'HEAD'; head -c 100000 /dev/zero; printf 'TAIL'"}, MaxOutputBytes: 10})
	if want := "HEAD\x00\x00TAIL"; string(got.Stdout.Data) != want {
		t.Errorf("Stdout = %q, want %q", got.Stdout.Data, want)
	}
	if got.Stdout.Total != 100008 || !got.Stdout.Truncated {
		t.Errorf("Stdout totals = %d, %v, want 100008, true", got.Stdout.Total, got.Stdout.Truncated)
	}
}

// TestTimeoutKillsWholeGroup runs a child that ignores SIGTERM and has a
// grandchild that ignores it too and holds stdout: after the timeout, neither
// may be left.
func TestTimeoutKillsWholeGroup(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "grandchild")
	// Long enough for a race-built helper on a loaded machine to print its
	// grandchild's pid before its SIGTERM (200 ms was not, in a CI run).
	spec.Timeout = time.Second
	start := time.Now()
	got := run(t, m, spec)
	if got.Status != StatusTimedOut || got.Signal != "SIGKILL" {
		t.Errorf("Run(grandchild) = %q %q, want timed_out SIGKILL", got.Status, got.Signal)
	}
	assertGone(t, got)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run(grandchild) took %v, want about timeout+grace", d)
	}
}

// TestExitedLeaderLeavesNoGrandchild: the leader exits at once, its grandchild
// holds stdout and ignores SIGTERM; the group is still ended.
func TestExitedLeaderLeavesNoGrandchild(t *testing.T) {
	m := testManager()
	got := run(t, m, helperSpec(t, "grandchild", "exit"))
	if got.Status != StatusExited || got.ExitCode == nil || *got.ExitCode != 0 {
		t.Errorf("Run(grandchild exit) = %q %v, want exited 0", got.Status, fmtCode(got.ExitCode))
	}
	assertGone(t, got)
}

func assertGone(t *testing.T, got Result) {
	t.Helper()
	line, _, _ := strings.Cut(string(got.Stdout.Data), "\n")
	gc, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("grandchild pid line %q: %v", line, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for pidAlive(gc) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pidAlive(gc) {
		t.Errorf("grandchild %d still alive after the group was ended", gc)
	}
}

func TestTerminateAndShutdown(t *testing.T) {
	m := testManager()
	p, err := m.Start(helperSpec(t, "ignore-term"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Terminate(StatusTerminated) {
		t.Errorf("Terminate() = false for a running process, want true")
	}
	if got := p.Result(); got.Status != StatusTerminated {
		t.Errorf("Result().Status = %q, want terminated", got.Status)
	}
	if p.Terminate(StatusTerminated) {
		t.Errorf("Terminate() = true for an ended process, want false")
	}

	var procs []*Process
	for range 5 {
		p, err := m.Start(helperSpec(t, "ignore-term"))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	for _, p := range procs {
		if got := p.Result(); got.Status != StatusShutdown {
			t.Errorf("after Shutdown, Status = %q, want shutdown", got.Status)
		}
		if pidAlive(p.Pid()) {
			t.Errorf("process %d alive after Shutdown", p.Pid())
		}
	}
	if _, err := m.Start(Spec{Argv: []string{"true"}}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Start after Shutdown error = %v, want ErrShuttingDown", err)
	}
}

func TestRunContextCancelTerminates(t *testing.T) {
	m := testManager()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p, err := m.Run(ctx, Spec{Argv: []string{"sleep", "10"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Result(); got.Status != StatusTerminated {
		t.Errorf("Result().Status = %q, want terminated", got.Status)
	}
}

// TestKeepNoOutput: a spec that keeps no output still counts it, whether the
// result comes from the ring or from the collector.
func TestKeepNoOutput(t *testing.T) {
	for _, ringBytes := range []int{1 << 20, 64} {
		m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, OutputRingBytes: ringBytes})
		got := run(t, m, Spec{Argv: []string{"sh", "-c", "head -c 1000 /dev/zero; echo err >&2"}, MaxOutputBytes: KeepNoOutput})
		if len(got.Stdout.Data) != 0 || got.Stdout.Total != 1000 || !got.Stdout.Truncated || len(got.Stderr.Data) != 0 || got.Stderr.Total != 4 {
			t.Errorf("ring %d: Result() with KeepNoOutput = stdout %d bytes of %d (truncated %v), stderr %d bytes of %d; want none of 1000 (truncated), none of 4",
				ringBytes, len(got.Stdout.Data), got.Stdout.Total, got.Stdout.Truncated, len(got.Stderr.Data), got.Stderr.Total)
		}
	}
}

// TestEscapeHoldingOutputDoesNotHoldTheEnd: a process that left the group
// and holds stdout gets the drain, not the grace: the group is empty, so
// nothing of the command's is left to end.
func TestEscapeHoldingOutputDoesNotHoldTheEnd(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: time.Hour, Drain: 50 * time.Millisecond})
	p, err := m.Start(Spec{Argv: []string{"sh", "-c", "setsid sleep 60 & p=$!\n" + leftItsGroup + "echo $p"}})
	if err != nil {
		t.Fatal(err)
	}
	escapee, err := strconv.Atoi(strings.TrimSpace(readUntil(t, p, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	// Not reaped by its new parent (this process) before the kill, so its pid
	// is still its own.
	defer syscall.Kill(escapee, syscall.SIGKILL)
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the command's end waited for the escaped process holding its stdout")
	}
	if r := p.Result(); r.Status != StatusExited {
		t.Errorf("Result() = %s, want exited", r.Status)
	}
}

// TestOutputWrittenBeforeTheEndIsKept: whatever the group wrote before it
// ended is in the result, however far behind the readers are when the
// leader's end is seen: a burst larger than the pipe's buffer leaves up to a
// buffer's worth unread at the exit. With a drain of 1 ns the drain is over
// at once, and a process ended by SIGTERM writes its burst on its way out
// after the kill has started: neither may close the pipes on unread output.
func TestOutputWrittenBeforeTheEndIsKept(t *testing.T) {
	const burst = 1 << 20
	tests := []struct {
		name      string
		opts      Options
		script    string
		terminate bool
		want      Status
	}{
		{"exits with the drain over at once", Options{Drain: time.Nanosecond}, "head -c 1048576 /dev/zero", false, StatusExited},
		{"writes on SIGTERM", Options{Grace: time.Hour}, `trap 'head -c 1048576 /dev/zero; exit 0' TERM; echo ready; while :; do sleep 0.01; done`, true, StatusTerminated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Reaper = testReaper
			m := NewManager(tt.opts)
			for i := range 100 {
				p, err := m.Start(Spec{Argv: []string{"/bin/sh", "-c", tt.script}, MaxOutputBytes: KeepNoOutput})
				if err != nil {
					t.Fatal(err)
				}
				if tt.terminate {
					readUntil(t, p, "ready\n")
					p.Terminate(StatusTerminated)
				}
				got := p.Result()
				want := int64(burst)
				if tt.terminate {
					want += int64(len("ready\n"))
				}
				if got.Status != tt.want || got.Stdout.Total != want {
					t.Fatalf("run %d: Result() = %s with %d stdout bytes, want %s with %d", i, got.Status, got.Stdout.Total, tt.want, want)
				}
			}
		})
	}
}

// TestChildStdioIsBlocking: the child's ends of its pipes are blocking, as a
// program expects of its stdio (a write to a non-blocking stdout can fail
// with EAGAIN and lose output), and the server's end of stdin is not: its
// writes wait in the poller, not in a thread.
func TestChildStdioIsBlocking(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper})
	spec := helperSpec(t, "stdio-flags")
	spec.PipeStdin = true
	p, err := m.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	// The lines arrive in one chunk or more; the last one comes within 10 s.
	var out []byte
	for afterSeq := int64(0); strings.Count(string(out), "\n") < 3; {
		r, err := p.Read(context.Background(), afterSeq, 0, 10*time.Second)
		if err != nil || len(r.Chunks) == 0 {
			break
		}
		for _, c := range r.Chunks {
			out = append(out, c.Data...)
		}
		afterSeq = r.NextSeq - 1
	}
	ours := "unknown"
	if rc, err := p.stdin.file().SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { ours = nonblocking(int(fd)) })
	}
	p.Terminate(StatusTerminated)
	if got := string(out); got != "0 blocking\n1 blocking\n2 blocking\n" || ours != "non-blocking" {
		t.Errorf("the child's stdin, stdout, stderr:\n%swant each blocking; the server's end of stdin is %s, want non-blocking", got, ours)
	}
}

// TestChildWithoutPipesHasDevNull: a child with no stdin given reads
// /dev/null, and one whose stderr is discarded writes to /dev/null: never a
// closed descriptor, which the next file it opens would take.
func TestChildWithoutPipesHasDevNull(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper})
	for range 2 { // the second spawn shares the first's /dev/null
		p, err := m.Run(context.Background(), Spec{
			Argv:          []string{"/bin/sh", "-c", "readlink /proc/self/fd/0 /proc/self/fd/2; head -c1; echo $?"},
			DiscardStderr: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(p.Result().Stdout.Data); got != "/dev/null\n/dev/null\n0\n" {
			t.Errorf("a child without stdin, stderr discarded: fd 0, fd 2, reading stdin:\n%swant /dev/null, /dev/null, an empty read", got)
		}
	}
}

// TestNewSession: a process with NewSession leads a session of its own and
// has no controlling terminal, so that an interactive shell cannot take the
// server's; without it, it shares the server's session in a group of its
// own.
func TestNewSession(t *testing.T) {
	m := testManager()
	// /proc/PID/stat after the name: state ppid pgrp session tty_nr.
	probe := `read -r pid name state ppid pgrp sid tty rest </proc/$$/stat; echo "$pid $pgrp $sid $tty"`
	for _, newSession := range []bool{false, true} {
		got := run(t, m, Spec{Argv: []string{"/bin/sh", "-c", probe}, NewSession: newSession})
		f := strings.Fields(string(got.Stdout.Data))
		if len(f) != 4 {
			t.Fatalf("NewSession %t: /proc/PID/stat read %q", newSession, got.Stdout.Data)
		}
		pid, pgrp, sid, tty := f[0], f[1], f[2], f[3]
		if pgrp != pid {
			t.Errorf("NewSession %t: group %s of child %s, want its own", newSession, pgrp, pid)
		}
		if (sid == pid) != newSession {
			t.Errorf("NewSession %t: session %s of child %s, want a session of its own %t", newSession, sid, pid, newSession)
		}
		if newSession && tty != "0" {
			t.Errorf("NewSession: controlling terminal %s, want none (0)", tty)
		}
	}
}

// TestNewSessionEndsTheSession: a process with NewSession leads its
// session, so that what it leaves is ended with it even outside its group:
// a job-control shell's jobs run in groups of their own (a profile's
// `set -m`), which no group kill reaches.
func TestNewSessionEndsTheSession(t *testing.T) {
	m := testManager()
	got := run(t, m, Spec{Argv: []string{"/bin/bash", "-c", "set -m; sleep 1000 >/dev/null 2>&1 & echo $!"}, NewSession: true})
	pid, err := strconv.Atoi(strings.TrimSpace(string(got.Stdout.Data)))
	if err != nil {
		t.Fatalf("the shell printed %q, want its job's pid", got.Stdout.Data)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(3 * time.Second)
	for pidAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pidAlive(pid) {
		t.Errorf("the job %d in a group of its own outlived its session's leader", pid)
	}
}
