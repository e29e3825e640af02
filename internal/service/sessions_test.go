package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// testReaper makes the test binary the child subreaper, as the server is:
// a shell's process substitution that its shell left unreaped is adopted
// and reaped at once, rather than by PID 1 whenever it gets to it (which
// would hold the group, and the command's end, until the grace's SIGKILL).
var testReaper = sync.OnceValues(func() (*exec.Reaper, error) {
	return exec.NewReaper(context.Background(), exec.ReaperOptions{})
})

// newSessionService returns a Service on a real exec.Manager whose captures
// run real login shells, bounded by opts; it shuts down with the test.
func newSessionService(t testing.TB, opts session.Options) *Service {
	t.Helper()
	return newSessionServiceWith(t, opts, standby.Options{Max: 8})
}

// newSessionServiceWith is newSessionService with standby shells bounded
// by sb.
func newSessionServiceWith(t testing.TB, opts session.Options, sb standby.Options) *Service {
	t.Helper()
	reaper, err := testReaper()
	if err != nil {
		t.Fatal(err)
	}
	procs := exec.NewManager(exec.Options{Reaper: reaper})
	cache, err := shellsnap.New(shellsnap.Options{Capture: shellsnap.NewCapturer(procs)})
	if err != nil {
		t.Fatal(err)
	}
	// Standby shells on, as the server's default: a session command that
	// comes once its session's standby waits runs in it.
	s, err := New(Options{Procs: procs, Snapshots: cache, Sessions: opts, Standby: sb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

// bashSession creates a bare bash session in a private directory.
func bashSession(t *testing.T, s *Service, id string) session.Info {
	t.Helper()
	home := t.TempDir()
	info, err := s.CreateSession(context.Background(), SessionInput{
		SessionID: id, Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// runIn runs script in session id and fails the test on an error.
func runIn(t *testing.T, s *Service, id, script string, timeout time.Duration) SessionExecOutput {
	t.Helper()
	out, err := s.SessionExec(context.Background(), id, SessionExecInput{Script: script, Timeout: timeout})
	if err != nil {
		t.Fatalf("%q: %v", script, err)
	}
	return out
}

func TestSessionTimedOutCommandKeepsEarlierState(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := bashSession(t, s, "hang").ID
	runIn(t, s, id, "cd /tmp; export A=1", time.Minute)
	out := runIn(t, s, id, "cd /; export A=2; sleep 600", 300*time.Millisecond)
	if out.Result.Status != exec.StatusTimedOut || out.Session.StateKept {
		t.Fatalf("hanging command: status %s, stateKept %v; want timed_out, false", out.Result.Status, out.Session.StateKept)
	}
	if out.Session.Cwd != "/tmp" {
		t.Errorf("cwd after the timeout = %q, want /tmp", out.Session.Cwd)
	}
	out = runIn(t, s, id, `echo "$PWD $A"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "/tmp 1\n" {
		t.Errorf("next command printed %q, want %q", got, "/tmp 1\n")
	}
}

func TestSessionStdinDoesNotWedge(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := bashSession(t, s, "stdin").ID
	out := runIn(t, s, id, `cat; read -r x; echo "x=$x"; y=set`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "x=\n" || !out.Session.StateKept {
		t.Fatalf("a command reading an empty stdin printed %q (stateKept %v)", got, out.Session.StateKept)
	}
	o, err := s.SessionExec(context.Background(), id, SessionExecInput{Script: `read -r x; echo "x=$x y=$y"`, Stdin: []byte("hi\n"), Timeout: time.Minute})
	if err != nil || string(o.Result.Stdout.Data) != "x=hi y=set\n" {
		t.Fatalf("stdin command: %q, %v", o.Result.Stdout.Data, err)
	}
}

func TestSessionCommandsAreOrderedAndForksRunAlongside(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := bashSession(t, s, "parent").ID
	runIn(t, s, id, "P=parent; cd /usr", time.Minute)
	ctx := context.Background()
	// The parent's command runs until it is ended.
	p, result, err := s.StartSessionExec(ctx, id, SessionExecInput{Script: "P=changed; sleep 600", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := s.SessionExec(ctx, id, SessionExecInput{Script: "true"}); !errors.Is(err, session.ErrBusy) {
		t.Fatalf("second command while one runs: %v, want ErrBusy", err)
	}
	fork, err := s.ForkSession(id, "child")
	if err != nil {
		t.Fatal(err)
	}
	out := runIn(t, s, fork.ID, `echo "$P $PWD"; P=child`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "parent /usr\n" || !out.Session.StateKept {
		t.Errorf("fork printed %q (stateKept %v), want the parent's state before its running command", got, out.Session.StateKept)
	}
	if info, err := s.Session(id); err != nil || !info.Busy {
		t.Fatalf("the parent's command ended before its fork's: %+v, %v", info, err)
	}
	if _, err := s.Terminate(p.Info().ID); err != nil {
		t.Fatal(err)
	}
	if end, err := result(ctx); err != nil || end.Session.StateKept {
		t.Fatalf("parent's ended command: %v, %+v", err, end.Session)
	}
	out = runIn(t, s, id, `echo "$P"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "parent\n" {
		t.Errorf("parent printed %q, want parent (its command was ended; the fork's change stays in the fork)", got)
	}
	out = runIn(t, s, fork.ID, `echo "$P"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "child\n" {
		t.Errorf("fork printed %q, want child", got)
	}
}

func TestSessionsRunConcurrently(t *testing.T) {
	s := newSessionService(t, session.Options{})
	ids := []string{bashSession(t, s, "one").ID, bashSession(t, s, "two").ID}
	var wg sync.WaitGroup
	errs := make(chan error, 2*10)
	for i, id := range ids {
		wg.Go(func() {
			for n := range 10 {
				out, err := s.SessionExec(context.Background(), id, SessionExecInput{
					Script: fmt.Sprintf(`echo "${N:-0}"; N=$(( ${N:-0} + %d ))`, i+1), Timeout: time.Minute,
				})
				if err != nil {
					errs <- err
					return
				}
				if got, want := string(out.Result.Stdout.Data), fmt.Sprintf("%d\n", n*(i+1)); got != want {
					errs <- fmt.Errorf("session %s command %d printed %q, want %q", id, n, got, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSessionUserExitTrapIsCarriedNotRun(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := bashSession(t, s, "trap").ID
	out := runIn(t, s, id, `trap 'echo bye' EXIT; T=1`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "" || !out.Session.StateKept {
		t.Fatalf("a command that sets an EXIT trap printed %q (stateKept %v): a persistent shell runs it only when it ends", got, out.Session.StateKept)
	}
	out = runIn(t, s, id, `echo "T=$T"; exit 4`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "T=1\n" || !out.Session.StateKept || *out.Result.ExitCode != 4 {
		t.Fatalf("next command printed %q, exit %v, stateKept %v", got, *out.Result.ExitCode, out.Session.StateKept)
	}
}

func TestSessionBounds(t *testing.T) {
	s := newSessionService(t, session.Options{MaxSessions: 1, MaxStateBytes: 64 << 10})
	id := bashSession(t, s, "only").ID
	home := t.TempDir()
	if _, err := s.CreateSession(context.Background(), SessionInput{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home}); !errors.Is(err, session.ErrTooMany) {
		t.Fatalf("a second session beyond MaxSessions: %v, want ErrTooMany", err)
	}
	out := runIn(t, s, id, `big=$(head -c 100000 /dev/zero | tr '\0' x); small=1`, time.Minute)
	if out.Session.StateKept {
		t.Fatal("a state beyond MaxStateBytes was kept")
	}
	out = runIn(t, s, id, `echo "${small-unset}"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "unset\n" {
		t.Errorf("after a state too large: %q", got)
	}
	if err := s.DeleteSession(id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionExec(context.Background(), id, SessionExecInput{Script: "true"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("a deleted session: %v, want ErrNotFound", err)
	}
}

func TestSessionClientGoneKeepsEarlierState(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := bashSession(t, s, "gone").ID
	runIn(t, s, id, "G=before", time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	p, result, err := s.StartSessionExec(ctx, id, SessionExecInput{Script: "G=after; sleep 600", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The client goes away: the handler terminates the process.
	cancel()
	if !p.Terminate() {
		t.Fatal("Terminate() of the running command = false")
	}
	end, err := result(context.Background())
	if err != nil || end.Session.StateKept || end.Result.Status != exec.StatusTerminated {
		t.Fatalf("a command whose client went away: %v, status %s, stateKept %v", err, end.Result.Status, end.Session.StateKept)
	}
	out := runIn(t, s, id, `echo "$G"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "before\n" {
		t.Errorf("after a command whose client went away: %q, want before", got)
	}
}

// TestSessionCommandsThatLeaveNoState: the documented cases where the
// session keeps the state before a command that ended by itself
// (docs/design/sessions.md#failure).
func TestSessionCommandsThatLeaveNoState(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := bashSession(t, s, "nostate").ID
	for _, script := range []string{
		"L=1; exec true",                           // no shell is left to dump
		"L=2; trap 'echo bye' EXIT; exit 5",        // the user's trap runs in the session's place
		"L=3; trap 'echo bye' EXIT; set -e; false", // likewise by errexit
	} {
		out := runIn(t, s, id, script, time.Minute)
		if out.Session.StateKept || out.Result.Status != exec.StatusExited {
			t.Errorf("%q: status %s, stateKept %v; want exited, the state before it", script, out.Result.Status, out.Session.StateKept)
		}
	}
	out := runIn(t, s, id, `echo "${L-unset}"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "unset\n" {
		t.Errorf("after commands that left no state: %q", got)
	}
}

func TestSessionInputsAreValidated(t *testing.T) {
	l := Limits{MaxArgBytes: 8, MaxTimeout: time.Minute}
	for _, tt := range []struct {
		in    SessionExecInput
		field string
	}{
		{SessionExecInput{Script: "a\x00b"}, "script"},
		{SessionExecInput{Script: "echo 123456789"}, "script"},
		{SessionExecInput{Script: "true", Timeout: time.Hour}, "timeoutMs"},
	} {
		var fe *FieldError
		if err := tt.in.Validate(l); !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("Validate(%+v) = %v, want a field error on %s", tt.in, err, tt.field)
		}
	}
	if err := (SessionInput{Shell: shellsnap.Shell{Name: "sh", Path: "/bin/sh"}}).Validate(l); !errors.Is(err, shellsnap.ErrSessionShell) {
		t.Errorf("an sh session: %v, want ErrSessionShell", err)
	}
	if err := (SessionInput{Shell: shellsnap.Shell{Name: "zsh", Path: "/bin/zsh"}}).Validate(l); err != nil {
		t.Errorf("a zsh session: %v", err)
	}
	var fe *FieldError
	if err := (SessionInput{Shell: shellsnap.Shell{Name: "bash"}}).Validate(l); !errors.As(err, &fe) || fe.Field != "shell.path" {
		t.Errorf("no shell path: %v", err)
	}
}

// TestBashSessionRefusesPosixModeFromTheStart: a bash session whose
// environment has POSIXLY_CORRECT is refused: each command's bash would
// start in posix mode, which runs no BASH_ENV, where the session's state
// comes in. A zsh session takes no notice of it.
func TestBashSessionRefusesPosixModeFromTheStart(t *testing.T) {
	s := newSessionService(t, session.Options{})
	home := t.TempDir()
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "POSIXLY_CORRECT": "y"}
	_, err := s.CreateSession(context.Background(), SessionInput{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home, Env: env})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "env" || !strings.Contains(fe.Reason, "POSIXLY_CORRECT") {
		t.Errorf("CreateSession(bash, POSIXLY_CORRECT) = %v, want a field error on env naming it", err)
	}
	if _, err := os.Stat("/usr/bin/zsh"); err == nil {
		if _, err := s.CreateSession(context.Background(), SessionInput{Shell: shellsnap.Shell{Name: "zsh", Path: "/usr/bin/zsh"}, Cwd: &home, Env: env}); err != nil {
			t.Errorf("CreateSession(zsh, POSIXLY_CORRECT) = %v, want it created", err)
		}
	}
}

// TestSessionDeletedWhileRunning: a command whose session is deleted while
// it runs goes on to its end, as the contract says, and its answer says its
// end state was dropped (stateKept false, and why), not kept.
func TestSessionDeletedWhileRunning(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := bashSession(t, s, "deleted").ID
	goOn := filepath.Join(t.TempDir(), "go-on")
	script := "D=1; until [[ -e " + goOn + " ]]; do sleep 0.01; done; echo went on"
	f, result, err := s.StartSessionExec(context.Background(), id, SessionExecInput{Script: script, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.DeleteSession(id); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goOn, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	end, err := result(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(end.Result.Stdout.Data); end.Result.Status != exec.StatusExited || got != "went on\n" {
		t.Errorf("the command of a deleted session: status %s, stdout %q; want it run to its end", end.Result.Status, got)
	}
	if end.Session.StateKept || !strings.Contains(end.Session.Reason, "deleted") {
		t.Errorf("the command of a deleted session: stateKept %v, reason %q; want false, saying the session was deleted", end.Session.StateKept, end.Session.Reason)
	}
	if _, err := s.SessionExec(context.Background(), id, SessionExecInput{Script: "true", Timeout: time.Minute}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("a command after the delete: %v, want ErrNotFound", err)
	}
}

// TestSessionCommandRefusedAfterItsLeaseChangesNothing: a session command
// refused once its session was taken (here by the process table's bound,
// found only at the spawn) leaves the session exactly as it was: its state,
// cwd, history, count of commands and last use; the next command runs in the
// state before the refused one.
func TestSessionCommandRefusedAfterItsLeaseChangesNothing(t *testing.T) {
	s := newRealService(t, exec.Options{MaxRunning: 1}, Options{})
	id := bashSession(t, s, "refused").ID
	runIn(t, s, id, "cd /tmp; X=1", time.Minute)
	before, err := s.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	stats := s.SessionStats()
	busy := start(t, s, StartInput{ExecInput: ExecInput{Argv: []string{"sleep", "600"}}})
	if _, err := s.SessionExec(context.Background(), id, SessionExecInput{Script: "cd /; X=2", Timeout: time.Minute}); !errors.Is(err, exec.ErrTooManyProcesses) {
		t.Fatalf("SessionExec beyond MaxRunning = %v, want exec.ErrTooManyProcesses", err)
	}
	after, err := s.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Errorf("the session after a refused command:\n%+v\nwant it as before:\n%+v", after, before)
	}
	if got := s.SessionStats(); got != stats {
		t.Errorf("session stats after a refused command = %+v, want %+v", got, stats)
	}
	if _, err := s.Terminate(busy.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, busy.ID, exec.StatusTerminated)
	out := runIn(t, s, id, `echo "$X $PWD"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "1 /tmp\n" {
		t.Errorf("the command after a refused one printed %q, want %q", got, "1 /tmp\n")
	}
}

// TestSessionEmptyScopeIsInvalid: a session from the snapshot of the empty
// scope is shellsnap.ErrInvalidScope, as a command's is, and makes no
// session; no scope at all is a bare shell's.
func TestSessionEmptyScopeIsInvalid(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := t.TempDir()
	in := SessionInput{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home, Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}, ScopeID: ptr("")}
	if _, err := s.CreateSession(context.Background(), in); !errors.Is(err, shellsnap.ErrInvalidScope) {
		t.Errorf("CreateSession with the empty scope = %v, want shellsnap.ErrInvalidScope", err)
	}
	if n := len(s.Sessions()); n != 0 {
		t.Errorf("%d sessions after the refusal, want none", n)
	}
	in.ScopeID = nil
	if _, err := s.CreateSession(context.Background(), in); err != nil {
		t.Errorf("CreateSession without a scope = %v", err)
	}
}
