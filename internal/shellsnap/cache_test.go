package shellsnap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// fakeCapturer is a Capturer whose output and failures a test controls; it
// counts its calls per scope (the scope is the cwd in these tests).
type fakeCapturer struct {
	mu      sync.Mutex
	calls   map[string]int
	release chan struct{} // when non-nil, every capture waits for it to close
	fail    error
}

func (f *fakeCapturer) capture(ctx context.Context, argv []string, cwd string, env map[string]string) ([]byte, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[cwd]++
	release, fail := f.release, f.fail
	f.mu.Unlock()
	if release != nil {
		<-release
	}
	if fail != nil {
		return nil, fail
	}
	return []byte("# Snapshot file\nfake_fn() { :; }\n\x00FROM_PROFILE=1\x00"), nil
}

func (f *fakeCapturer) count(cwd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cwd]
}

func bashRequest(scope string) *Request {
	return &Request{ScopeID: scope, Shell: Shell{Name: "bash", Path: "/bin/bash"}}
}

func bashCommand(cwd string) *Command {
	return &Command{Argv: []string{"/bin/bash", "-lc", "true"}, Cwd: cwd, Env: map[string]string{"HOME": "/h"}, RequestEnv: map[string]string{"HOME": "/h"}}
}

func newTestCache(t *testing.T, opts Options) *Cache {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustPrepare(t *testing.T, c *Cache, req *Request, cmd *Command, purpose Purpose) Receipt {
	t.Helper()
	r, err := c.Prepare(context.Background(), req, cmd, purpose)
	if err != nil {
		t.Fatalf("Prepare(%q, %q) error %v", req.ScopeID, cmd.Argv, err)
	}
	return r
}

func TestPrepareChecksInOrder(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	long := strings.Repeat("s", MaxScopeBytes+1)
	tests := []struct {
		name        string
		req         *Request
		argv        []string
		wantErr     error
		wantOutcome Outcome
	}{
		{"not requested", nil, []string{"/bin/bash", "-lc", "true"}, nil, OutcomeNotRequested},
		{"empty scope", bashRequest(""), []string{"/bin/bash", "-lc", "true"}, ErrInvalidScope, ""},
		{"scope too long, even with a bad argv", bashRequest(long), []string{"true"}, ErrInvalidScope, ""},
		{"scope of 256 bytes", bashRequest(long[:MaxScopeBytes]), []string{"/bin/bash", "-lc", "true"}, nil, OutcomeUsed},
		{"too short", bashRequest("s"), []string{"/bin/bash", "-lc"}, nil, OutcomeIneligible},
		{"other path", bashRequest("s"), []string{"bash", "-lc", "true"}, nil, OutcomeIneligible},
		{"-c", bashRequest("s"), []string{"/bin/bash", "-c", "true"}, nil, OutcomeIneligible},
		{"-l -c", bashRequest("s"), []string{"/bin/bash", "-l", "-c", "true"}, nil, OutcomeIneligible},
		{"-ilc", bashRequest("s"), []string{"/bin/bash", "-ilc", "true"}, nil, OutcomeIneligible},
		// Unlike the reference, the shell name comes before the argv shape:
		// an unsupported shell is refused whatever the argv (issue 14).
		{"fish with a bad argv", &Request{ScopeID: "s", Shell: Shell{Name: "fish", Path: "/usr/bin/fish"}}, []string{"/usr/bin/fish", "-c", "true"}, ErrUnsupportedShell, ""},
		{"fish with no argv to speak of", &Request{ScopeID: "s", Shell: Shell{Name: "fish", Path: "/usr/bin/fish"}}, []string{"true"}, ErrUnsupportedShell, ""},
		{"scope before shell", &Request{ScopeID: "", Shell: Shell{Name: "fish", Path: "/usr/bin/fish"}}, []string{"true"}, ErrInvalidScope, ""},
		{"fish with a good argv", &Request{ScopeID: "s", Shell: Shell{Name: "fish", Path: "/usr/bin/fish"}}, []string{"/usr/bin/fish", "-lc", "true"}, ErrUnsupportedShell, ""},
		{"extra args allowed", bashRequest("s"), []string{"/bin/bash", "-lc", "echo $1", "arg0", "one"}, nil, OutcomeUsed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := bashCommand("/cwd-" + tt.name)
			cmd.Argv = clone(tt.argv)
			r, err := c.Prepare(context.Background(), tt.req, cmd, Execution)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Prepare() error = %v, want %v", err, tt.wantErr)
			}
			if r.Outcome != tt.wantOutcome {
				t.Errorf("Prepare().Outcome = %q, want %q", r.Outcome, tt.wantOutcome)
			}
			if tt.wantOutcome != OutcomeUsed && !reflect.DeepEqual(cmd.Argv, tt.argv) {
				t.Errorf("Prepare() rewrote argv to %q, want unchanged", cmd.Argv)
			}
			if tt.wantOutcome == OutcomeUsed && len(tt.argv) > 3 && !reflect.DeepEqual(cmd.Argv[3:], tt.argv[3:]) {
				t.Errorf("Prepare() extra args = %q, want %q", cmd.Argv[3:], tt.argv[3:])
			}
		})
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	for i := range MaxCachedSnapshots {
		mustPrepare(t, c, bashRequest("s"), bashCommand("/"+strconv.Itoa(i)), Execution)
	}
	// Touch /0, so that /1 is now the least recently used; the 17th key evicts it.
	if r := mustPrepare(t, c, bashRequest("s"), bashCommand("/0"), Execution); r.State != StateCacheHit {
		t.Fatalf("second Prepare(/0).State = %q, want cache_hit", r.State)
	}
	mustPrepare(t, c, bashRequest("s"), bashCommand("/16"), Execution)
	if r := mustPrepare(t, c, bashRequest("s"), bashCommand("/0"), Execution); r.State != StateCacheHit || f.count("/0") != 1 {
		t.Errorf("Prepare(/0) after the 17th key = %q with %d captures, want cache_hit and 1", r.State, f.count("/0"))
	}
	if r := mustPrepare(t, c, bashRequest("s"), bashCommand("/1"), Execution); r.State != StateOnDemand || f.count("/1") != 2 {
		t.Errorf("Prepare(/1) after its eviction = %q with %d captures, want on_demand and 2", r.State, f.count("/1"))
	}
}

func TestCacheKeyIncludesPolicyButNotEnv(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	a := bashCommand("/k")
	mustPrepare(t, c, bashRequest("s"), a, Execution)
	b := bashCommand("/k")
	b.Env["PATH"] = "/different"
	if r := mustPrepare(t, c, bashRequest("s"), b, Execution); r.State != StateCacheHit {
		t.Errorf("a different env got %q, want cache_hit: env is not part of the key", r.State)
	}
	p := bashCommand("/k")
	p.Policy = &envpolicy.Policy{Inherit: envpolicy.InheritNone}
	if r := mustPrepare(t, c, bashRequest("s"), p, Execution); r.State != StateOnDemand {
		t.Errorf("a different policy got %q, want on_demand: the policy is part of the key", r.State)
	}
	if r := mustPrepare(t, c, &Request{ScopeID: "s", Shell: Shell{Name: "sh", Path: "/bin/bash"}}, bashCommand("/k"), Execution); r.State != StateOnDemand {
		t.Errorf("a different shell name got %q, want on_demand", r.State)
	}
}

func TestCacheSingleFlight(t *testing.T) {
	f := &fakeCapturer{release: make(chan struct{})}
	c := newTestCache(t, Options{Capture: f.capture})
	const n = 50
	var wg sync.WaitGroup
	states := make(chan State, n)
	cmds := make([]*Command, n)
	for i := range n {
		cmds[i] = bashCommand("/sf")
		wg.Go(func() {
			states <- mustPrepare(t, c, bashRequest("s"), cmds[i], Execution).State
		})
	}
	for f.count("/sf") == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the others join the capture in flight
	close(f.release)
	wg.Wait()
	close(states)
	got := map[State]int{}
	for s := range states {
		got[s]++
	}
	if f.count("/sf") != 1 {
		t.Errorf("%d concurrent first requests ran %d captures, want 1", n, f.count("/sf"))
	}
	if got[StateOnDemand] != 1 || got[StateOnDemand]+got[StateCapturePending] != n {
		t.Errorf("states = %v, want 1 on_demand and the rest capture_pending", got)
	}
	for i := 1; i < n; i++ {
		if !reflect.DeepEqual(cmds[i].Argv, cmds[0].Argv) || !reflect.DeepEqual(cmds[i].Env, cmds[0].Env) {
			t.Fatalf("command %d differs from command 0 after the shared capture", i)
		}
	}
}

func TestImpatientWaiterDoesNotCancelCapture(t *testing.T) {
	f := &fakeCapturer{release: make(chan struct{})}
	c := newTestCache(t, Options{Capture: f.capture})
	first := make(chan Receipt, 1)
	go func() { first <- mustPrepare(t, c, bashRequest("s"), bashCommand("/imp"), Execution) }()
	for f.count("/imp") == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waiterDone := make(chan Receipt, 1)
	cmd := bashCommand("/imp")
	go func() {
		r, _ := c.Prepare(ctx, bashRequest("s"), cmd, Execution)
		waiterDone <- r
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if r := <-waiterDone; r.Outcome != OutcomeFallback || cmd.Argv[2] != "true" {
		t.Errorf("cancelled waiter = %q with argv %q, want fallback and unchanged", r.Outcome, cmd.Argv)
	}
	close(f.release)
	if r := <-first; r.Outcome != OutcomeUsed {
		t.Errorf("capturing caller = %q, want used after another waiter gave up", r.Outcome)
	}
}

func TestPrewarmStates(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	cmd := bashCommand("/pw")
	if r := mustPrepare(t, c, bashRequest("s"), cmd, Prewarm); r.Outcome != OutcomeUsed || cmd.Argv[2] != "true" {
		t.Errorf("Prewarm() = %q with argv %q, want success without a rewrite", r.Outcome, cmd.Argv)
	}
	if r := mustPrepare(t, c, bashRequest("s"), bashCommand("/pw"), Execution); r.State != StatePrewarmReady {
		t.Errorf("after a prewarm, State = %q, want prewarm_ready", r.State)
	}

	f.release = make(chan struct{})
	go func() { _, _ = c.Prepare(context.Background(), bashRequest("s"), bashCommand("/pw2"), Prewarm) }()
	for f.count("/pw2") == 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan Receipt)
	go func() { done <- mustPrepare(t, c, bashRequest("s"), bashCommand("/pw2"), Execution) }()
	time.Sleep(10 * time.Millisecond)
	close(f.release)
	if r := <-done; r.State != StatePrewarmPending || r.Outcome != OutcomeUsed {
		t.Errorf("a command waiting on a prewarm = %q %q, want prewarm_pending used", r.State, r.Outcome)
	}
}

func TestCaptureFailureLeavesCommandUnchanged(t *testing.T) {
	f := &fakeCapturer{fail: &CaptureError{Reason: ReasonNonzeroExit, Message: "shell snapshot capture exited with exit status: 7"}}
	c := newTestCache(t, Options{Capture: f.capture})
	cmd := bashCommand("/fail")
	want := bashCommand("/fail")
	r := mustPrepare(t, c, bashRequest("s"), cmd, Execution)
	if r.Outcome != OutcomeFallback || r.State != StateOnDemand || !strings.Contains(r.Reason, "exit status: 7") {
		t.Errorf("Prepare() = %+v, want fallback on_demand with the reason", r)
	}
	if !reflect.DeepEqual(cmd, want) {
		t.Errorf("Prepare() changed the command: %+v, want %+v", cmd, want)
	}
	if r := mustPrepare(t, c, bashRequest("s"), bashCommand("/fail"), Execution); r.State != StateUnavailable || f.count("/fail") != 1 {
		t.Errorf("during backoff = %q with %d captures, want unavailable and 1", r.State, f.count("/fail"))
	}
}

// TestBackoffBoundary runs under synctest, whose fake clock drives the
// cache's default clock: a retry is allowed at exactly failure + 1 s.
func TestBackoffBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCapturer{fail: errors.New("boom")}
		c := newTestCache(t, Options{Capture: f.capture})
		mustPrepare(t, c, bashRequest("s"), bashCommand("/b"), Execution)
		time.Sleep(SnapshotRetryBackoff - time.Nanosecond)
		mustPrepare(t, c, bashRequest("s"), bashCommand("/b"), Execution)
		if got := f.count("/b"); got != 1 {
			t.Errorf("captures just before the backoff ends = %d, want 1", got)
		}
		time.Sleep(time.Nanosecond)
		mustPrepare(t, c, bashRequest("s"), bashCommand("/b"), Execution)
		if got := f.count("/b"); got != 2 {
			t.Errorf("captures at the end of the backoff = %d, want 2", got)
		}
		for range 5 {
			time.Sleep(SnapshotRetryBackoff)
			mustPrepare(t, c, bashRequest("s"), bashCommand("/b"), Execution)
		}
		if got := f.count("/b"); got != MaxSnapshotAttempts {
			t.Errorf("captures after the budget = %d, want %d", got, MaxSnapshotAttempts)
		}
	})
}

// realCache is a cache with the real capture and a short timeout.
func realCache(t *testing.T, timeout time.Duration) *Cache {
	t.Helper()
	return newTestCache(t, Options{Timeout: timeout})
}

// realBashCommand is bash -lc script with HOME=home.
func realBashCommand(home, script string) *Command {
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	return &Command{Argv: []string{"/bin/bash", "-lc", script}, Cwd: home, Env: env, RequestEnv: cloneMap(env)}
}

func TestHangingProfileFallsBackAndLeavesNothing(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bashrc"), "sleep 30 & echo $! > \"$HOME/pid\"; wait\n")
	c := realCache(t, 500*time.Millisecond)
	cmd := realBashCommand(home, "true")
	start := time.Now()
	r := mustPrepare(t, c, bashRequest("s"), cmd, Execution)
	if r.Outcome != OutcomeFallback || !strings.Contains(r.Reason, "timed out") {
		t.Errorf("hanging profile = %+v, want fallback timed out", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hanging capture took %v, want about the 500ms limit", d)
	}
	if cmd.Argv[2] != "true" {
		t.Errorf("argv rewritten to %q after a failed capture", cmd.Argv)
	}
	assertPidGone(t, filepath.Join(home, "pid"))
}

func TestBackgroundJobHoldingStdout(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bashrc"), "sleep 30 & echo $! > \"$HOME/pid\"\nbg_fn() { echo bg; }\n")
	c := realCache(t, 5*time.Second)
	cmd := realBashCommand(home, "bg_fn")
	start := time.Now()
	r := mustPrepare(t, c, bashRequest("s"), cmd, Execution)
	if r.Outcome != OutcomeUsed {
		t.Errorf("profile with a background job = %+v, want used", r)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("capture took %v; a job holding stdout must not hold the capture", d)
	}
	assertPidGone(t, filepath.Join(home, "pid"))
}

func TestOversizeCaptureFallsBack(t *testing.T) {
	home := t.TempDir()
	// 3,000 functions of about 230 bytes each: well past 512 KiB of state.
	writeFile(t, filepath.Join(home, ".bashrc"), "pad=$(printf '%0200d' 0)\nfor i in $(seq 3000); do eval \"f$i() { echo $pad; }\"; done\n")
	c := realCache(t, 5*time.Second)
	cmd := realBashCommand(home, "true")
	r := mustPrepare(t, c, bashRequest("s"), cmd, Execution)
	if r.Outcome != OutcomeFallback || r.Reason != fmt.Sprintf("shell snapshot exceeds %d bytes", MaxSnapshotBytes) {
		t.Errorf("oversize capture = %+v, want fallback with the size reason", r)
	}
}

func assertPidGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("profile did not record its job: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if !processRunning(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("profile job %d still running after the capture", pid)
}

// processRunning reports whether pid exists and is not a zombie.
func processRunning(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func TestMaxConcurrentCaptures(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	capture := func(ctx context.Context, argv []string, cwd string, env map[string]string) ([]byte, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		return []byte("# Snapshot file\n\x00"), nil
	}
	c := newTestCache(t, Options{Capture: capture, MaxConcurrentCaptures: 2})
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() { mustPrepare(t, c, bashRequest("s"), bashCommand("/slot"+strconv.Itoa(i)), Execution) })
	}
	for running.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // give a third capture the chance to start if the bound were broken
	close(release)
	wg.Wait()
	if got := peak.Load(); got != 2 {
		t.Errorf("peak concurrent captures = %d, want 2", got)
	}
}

func TestFailedPrewarmEntryIsFailedWithoutBackoff(t *testing.T) {
	f := &fakeCapturer{fail: &CaptureError{Reason: ReasonNonzeroExit, Message: "exit status: 7"}}
	c := newTestCache(t, Options{Capture: f.capture})
	if _, err := c.Prepare(context.Background(), bashRequest("pf"), bashCommand("/pf"), Prewarm); err == nil {
		t.Fatal("failed prewarm returned nil")
	}
	e, ok := c.Entry(*bashRequest("pf"), "/pf", nil)
	if !ok || e.State != EntryFailed || !e.RetryAt.IsZero() || e.LastError == nil || e.Attempts != 1 {
		t.Errorf("entry after a failed prewarm = %+v, want failed, no retryAt, the error, attempt 1", e)
	}
	// Nothing was cached: the next command captures at once.
	mustPrepare(t, c, bashRequest("pf"), bashCommand("/pf"), Execution)
	if got := f.count("/pf"); got != 2 {
		t.Errorf("captures = %d, want 2", got)
	}
}
