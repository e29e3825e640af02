package service

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// hangingCapture is a capture that hangs until its context ends, as a
// profile that never returns does.
func hangingCapture(ctx context.Context, _ []string, _ string, _ map[string]string, _ sandbox.Policy, _ bool) ([]byte, error) {
	<-ctx.Done()
	return nil, &shellsnap.CaptureError{Reason: shellsnap.ReasonTimeout, Message: "shell snapshot capture timed out"}
}

// newTestService is a Service whose captures capture runs; no test here
// spawns a process, so that it runs under synctest.
func newTestService(t *testing.T, capture shellsnap.Capturer) *Service {
	t.Helper()
	cache, err := shellsnap.New(shellsnap.Options{Capture: capture})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Close) // its restore files' directory, in the temporary directory
	s, err := New(Options{Procs: exec.NewManager(exec.Options{}), Snapshots: cache})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// snapshotInput is a bash -lc command that asks for scope's snapshot.
func snapshotInput(scope string, timeout time.Duration) ExecInput {
	return ExecInput{
		Argv:     []string{"/bin/bash", "-lc", "true"},
		Env:      map[string]string{"HOME": "/nonexistent"},
		Snapshot: &shellsnap.Request{ScopeID: scope, Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}},
		Timeout:  timeout,
	}
}

func waiting(s *Service, scope string) int {
	entries := s.snapshots.Scope(scope)
	if len(entries) == 0 {
		return 0
	}
	return entries[0].Waiting
}

// TestShutdownAnswersEveryWaiter: three commands wait on a capture that
// hangs; Shutdown answers each at once with status shutdown and no
// process, and the gate then refuses new work.
func TestShutdownAnswersEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestService(t, hangingCapture)
		type answer struct {
			out ExecOutput
			err error
		}
		answers := make(chan answer, 3)
		for range 3 {
			go func() {
				out, err := s.Exec(context.Background(), snapshotInput("w", 10*time.Minute))
				answers <- answer{out, err}
			}()
		}
		prewarmed := make(chan error, 1)
		go func() {
			_, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "p", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Wait: true})
			prewarmed <- err
		}()
		synctest.Wait()
		if n := waiting(s, "w"); n != 3 {
			t.Fatalf("%d commands wait on the capture, want 3", n)
		}
		if s.ShuttingDown() {
			t.Fatalf("ShuttingDown() before Shutdown")
		}
		start := time.Now()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown() = %v", err)
		}
		for i := range 3 {
			a := <-answers
			if a.err != nil || a.out.Result.Status != exec.StatusShutdown || a.out.ProcessID != "" || a.out.Pid != 0 ||
				a.out.Snapshot.Outcome != shellsnap.OutcomeNotRun || !strings.Contains(a.out.Snapshot.Reason, "shutting down") {
				t.Errorf("waiter %d at shutdown = %+v, %v; want status shutdown, no process, not_run saying why", i, a.out, a.err)
			}
		}
		if err := <-prewarmed; !errors.Is(err, exec.ErrShuttingDown) {
			t.Errorf("waiting prewarm at shutdown = %v, want ErrShuttingDown", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the waiters were answered %v after Shutdown, want at once", waited)
		}
		if !s.ShuttingDown() {
			t.Errorf("ShuttingDown() = false after Shutdown")
		}
		if _, err := s.Exec(context.Background(), ExecInput{Argv: []string{"true"}}); !errors.Is(err, exec.ErrShuttingDown) {
			t.Errorf("Exec() after Shutdown = %v, want ErrShuttingDown", err)
		}
		if _, err := s.Start(context.Background(), StartInput{ExecInput: snapshotInput("w", 0)}); !errors.Is(err, exec.ErrShuttingDown) {
			t.Errorf("Start() after Shutdown = %v, want ErrShuttingDown", err)
		}
		if _, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "w", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Wait: false}); !errors.Is(err, exec.ErrShuttingDown) {
			t.Errorf("Prewarm() after Shutdown = %v, want ErrShuttingDown", err)
		}
	})
}

// TestBackgroundWaiterAtShutdown: a background start waiting on a capture
// when Shutdown begins gets a NotRunError that the handlers answer as
// shutting_down: nothing was started.
func TestBackgroundWaiterAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestService(t, hangingCapture)
		started := make(chan error, 1)
		go func() {
			_, err := s.Start(context.Background(), StartInput{ExecInput: snapshotInput("b", 0), PipeStdin: true})
			started <- err
		}()
		synctest.Wait()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := <-started
		var nr *NotRunError
		if !errors.As(err, &nr) || !errors.Is(err, exec.ErrShuttingDown) || nr.Status != exec.StatusShutdown {
			t.Errorf("background start waiting at shutdown = %v, want a NotRunError of status shutdown that is ErrShuttingDown", err)
		}
		if n := len(s.List()); n != 0 {
			t.Errorf("%d processes in the table, want none", n)
		}
	})
}

// TestTimeoutBoundsTheWholeRequest: with a capture that hangs, a command's
// timeout ends its wait (before, the wait came first and the timeout only
// after it); the command never runs and the capture goes on.
func TestTimeoutBoundsTheWholeRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestService(t, hangingCapture)
		defer s.snapshots.Close()
		start := time.Now()
		out, err := s.Exec(context.Background(), snapshotInput("t", time.Second))
		if err != nil || out.Result.Status != exec.StatusTimedOut || out.ProcessID != "" || out.Snapshot.Outcome != shellsnap.OutcomeNotRun ||
			!strings.Contains(out.Snapshot.Reason, "timeout ran out") || out.Snapshot.Wait != time.Second {
			t.Errorf("Exec() with a 1s timeout and a hung capture = %+v, %v; want timed_out, no process, not_run after 1s saying why", out, err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("Exec() answered after %v, want the 1s timeout", waited)
		}
		if e := s.snapshots.Scope("t"); len(e) != 1 || e[0].State != shellsnap.EntryPending {
			t.Errorf("entry after the command left = %+v, want pending: the capture goes on", e)
		}

		// A background start is bounded the same way; the handlers answer
		// ErrTimedOutWaiting as 504.
		_, err = s.Start(context.Background(), StartInput{ExecInput: snapshotInput("t", time.Second)})
		var nr *NotRunError
		if !errors.As(err, &nr) || !errors.Is(err, ErrTimedOutWaiting) || nr.Status != exec.StatusTimedOut {
			t.Errorf("Start() with a 1s timeout and a hung capture = %v, want a NotRunError of status timed_out", err)
		}
	})
}

// TestProcessGetsWhatRemains: the process's own timeout is what remains of
// the request's after its wait for the capture.
func TestProcessGetsWhatRemains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(ctx context.Context, argv []string, _ string, _ map[string]string, _ sandbox.Policy, _ bool) ([]byte, error) {
			time.Sleep(400 * time.Millisecond)
			// An empty state as the capture script prints it, under the
			// nonce the script carries (shellsnap's records.go).
			nonce := regexp.MustCompile(`(?m)^__snapexec_n=([0-9a-f]+)$`).FindStringSubmatch(strings.Join(argv, "\n"))[1]
			return []byte("# Snapshot file\n" + nonce + " begin bash\n\n" + nonce + " end\n\n\x00HOME=/nonexistent\x00"), nil
		}
		s := newTestService(t, slow)
		spec, receipt, _, err := s.prepare(context.Background(), snapshotInput("r", time.Second))
		if err != nil || receipt.Outcome != shellsnap.OutcomeUsed {
			t.Fatalf("prepare() = %+v, %v; want used", receipt, err)
		}
		if receipt.Wait != 400*time.Millisecond || spec.Timeout != 600*time.Millisecond {
			t.Errorf("after a wait of %v the process's timeout is %v, want 600ms of the request's 1s", receipt.Wait, spec.Timeout)
		}
		// Without a snapshot the timeout is the request's, whole.
		spec, _, _, _ = s.prepare(context.Background(), ExecInput{Argv: []string{"true"}, Timeout: time.Second})
		if spec.Timeout != time.Second {
			t.Errorf("a command without a snapshot gets timeout %v, want its 1s", spec.Timeout)
		}
	})
}
