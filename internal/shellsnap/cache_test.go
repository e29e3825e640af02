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
	"github.com/snapexec/snapexec/internal/sandbox"
)

// fakeCapturer is a Capturer whose output and failures a test controls; it
// counts its calls per scope (the scope is the cwd in these tests).
type fakeCapturer struct {
	mu      sync.Mutex
	calls   map[string]int
	release chan struct{} // when non-nil, every capture waits for it to close, or for its ctx to end
	fail    error
	// sandboxes are the sandboxes of the captures, in order; argvs their
	// commands, and sessions whether each ran in a session of its own.
	sandboxes []sandbox.Policy
	argvs     [][]string
	sessions  []bool
}

func (f *fakeCapturer) capture(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[cwd]++
	f.sandboxes = append(f.sandboxes, sb)
	f.argvs, f.sessions = append(f.argvs, argv), append(f.sessions, newSession)
	release, fail := f.release, f.fail
	f.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, &CaptureError{Reason: ReasonTimeout, Message: "shell snapshot capture timed out"}
		}
	}
	if fail != nil {
		return nil, fail
	}
	return captureOutput(captureNonce(argv), "bash", "", nil, append(envPairs(env), "FROM_PROFILE=1")...), nil
}

func (f *fakeCapturer) count(cwd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cwd]
}

func bashRequest(scope string) *Request {
	return &Request{ScopeID: scope, Shell: Shell{Name: "bash", Path: "/bin/bash"}}
}

func bashCommand(cwd string) Launch {
	return Launch{Argv: []string{"/bin/bash", "-lc", "true"}, Cwd: cwd, Env: map[string]string{"HOME": "/h"}}
}

func newTestCache(t testing.TB, opts Options) *Cache {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // its restore files' directory, in the temporary directory
	return c
}

// mustPrepare is Prepare, or Prewarm for that purpose, that must succeed.
func mustPrepare(t *testing.T, c *Cache, req *Request, l Launch, purpose Purpose) Receipt {
	t.Helper()
	r, err := prepare(c, req, l, purpose)
	if err != nil {
		t.Fatalf("Prepare(%q, %q) error %v", req.ScopeID, l.Argv, err)
	}
	return r
}

// prepare is Prepare's receipt, or Prewarm's for that purpose.
func prepare(c *Cache, req *Request, l Launch, purpose Purpose) (Receipt, error) {
	if purpose == Prewarm {
		return c.Prewarm(context.Background(), *req, l)
	}
	p, err := c.Prepare(context.Background(), req, l)
	return p.Receipt, err
}

// replayOf is the command a caller starts for l after Prepare answered p:
// l's own, or the snapshot replayed into it. The tests' launches have no
// env policy, so the request's env is the launch's.
func replayOf(req *Request, l Launch, p Prepared) (argv []string, env map[string]string) {
	if p.Snapshot == nil {
		return l.Argv, l.Env
	}
	return Replay(ReplayInput{Snapshot: p.Snapshot, Shell: req.Shell.Name, Command: l.Argv, Env: l.Env})
}

// TestSandboxesKeepTheirSnapshots: the capture of a sandboxed launch runs in
// its sandbox, and a snapshot is used only by launches of the same sandbox:
// sandboxed and unsandboxed launches, and two sandboxes, never share one.
func TestSandboxesKeepTheirSnapshots(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	launches := []sandbox.Policy{
		{},
		{WritableRoots: []string{"/w"}},
		{WritableRoots: []string{"/w"}, Network: sandbox.NetworkNone},
		{ReadOnly: true},
	}
	for round := range 2 {
		for i, sb := range launches {
			l := bashCommand("/k")
			l.Sandbox = sb
			if round == 1 && len(sb.WritableRoots) > 0 {
				l.Sandbox.WritableRoots = []string{"/w/", "/w"} // the same sandbox, spelled otherwise
			}
			if r := mustPrepare(t, c, bashRequest("s"), l, Execution); r.Outcome != OutcomeUsed {
				t.Fatalf("round %d, launch %d: outcome %s, want used", round, i, r.Outcome)
			}
		}
	}
	if n := f.count("/k"); n != len(launches) {
		t.Errorf("%d captures for %d sandboxes prepared twice each, want one per sandbox", n, len(launches))
	}
	for i, sb := range f.sandboxes {
		if sb.Key() != launches[i].Key() {
			t.Errorf("capture %d ran in sandbox %+v, want its launch's %+v", i, sb, launches[i])
		}
	}
	for _, sb := range launches {
		l := bashCommand("/k")
		l.Sandbox = sb
		if e, ok := c.Entry(*bashRequest("s"), l); !ok || e.Sandbox.Key() != sb.Key() {
			t.Errorf("Entry of the launch in %+v = %+v, %v; want the entry showing that sandbox", sb, e.Sandbox, ok)
		}
	}
}

// TestLoginTerminalHasASnapshotOfItsOwn: a login terminal's launch
// (Launch.Terminal) is captured by an interactive login shell in a session
// of its own, under a key of its own that the registry shows; a command of
// the same scope has its own snapshot, captured as ever, which
// ReplayInteractive refuses, and the terminal's is the only one it takes.
func TestLoginTerminalHasASnapshotOfItsOwn(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	terminal := bashCommand("/t")
	terminal.Argv, terminal.Terminal = []string{"/bin/bash", "-il"}, true
	command := bashCommand("/t")
	var snaps []*Snapshot
	for i, l := range []Launch{terminal, command, terminal, command} {
		p, err := c.Prepare(context.Background(), bashRequest("s"), l)
		wantState := StateOnDemand
		if i >= 2 {
			wantState = StateCacheHit
		}
		if err != nil || p.Receipt.Outcome != OutcomeUsed || p.Receipt.State != wantState {
			t.Fatalf("Prepare #%d (%q, terminal %t) = %+v, %v; want used, %s", i, l.Argv, l.Terminal, p.Receipt, err, wantState)
		}
		snaps = append(snaps, p.Snapshot)
	}
	if len(f.argvs) != 2 {
		t.Fatalf("%d captures, want 2 (one per key)", len(f.argvs))
	}
	if a := f.argvs[0]; len(a) != 4 || a[0] != "/bin/bash" || a[1] != "--noprofile" || a[2] != "-ilc" || !f.sessions[0] {
		t.Errorf("the terminal's capture ran %q, new session %t; want [/bin/bash --noprofile -ilc CAPTURE] in a session of its own", a[:min(len(a), 3)], f.sessions[0])
	}
	if a := f.argvs[1]; a[1] != "--noprofile" || a[2] != "-lc" || f.sessions[1] {
		t.Errorf("the command's capture ran %q, new session %t; want [/bin/bash --noprofile -lc CAPTURE] as ever", a[:3], f.sessions[1])
	}
	entries := c.Scope("s")
	if len(entries) != 2 || !entries[0].Terminal || entries[1].Terminal || entries[0].Key == entries[1].Key {
		t.Errorf("entries = %+v; want the terminal's (Terminal) and the command's, two keys", entries)
	}
	in := ReplayInput{Shell: "bash", Command: terminal.Argv, Env: terminal.Env}
	for i, want := range []bool{true, false} {
		in.Snapshot = snaps[i]
		if _, _, ok := ReplayInteractive(in); ok != want {
			t.Errorf("ReplayInteractive of the %s's snapshot: ok %t, want %t", []string{"terminal", "command"}[i], ok, want)
		}
	}

	for _, tt := range []struct {
		name string
		req  *Request
		argv []string
	}{
		{"a command's argv", bashRequest("s"), []string{"/bin/bash", "-lc", "true"}},
		{"not a login shell", bashRequest("s"), []string{"/bin/bash", "-i"}},
		{"sh", &Request{ScopeID: "s", Shell: Shell{Name: "sh", Path: "/bin/sh"}}, []string{"/bin/sh", "-l"}},
	} {
		l := bashCommand("/t-" + tt.name)
		l.Argv, l.Terminal = tt.argv, true
		if p, err := c.Prepare(context.Background(), tt.req, l); err != nil || p.Receipt.Outcome != OutcomeIneligible || p.Snapshot != nil {
			t.Errorf("Prepare(terminal, %s: %q) = %+v, %v; want ineligible", tt.name, tt.argv, p.Receipt, err)
		}
	}
}

// TestNewRequiresACapturer: a cache has no capture of its own, which no
// shutdown or keeper would reach.
func TestNewRequiresACapturer(t *testing.T) {
	if c, err := New(Options{}); err == nil || c != nil {
		t.Fatalf("New(Options{}) = %v, %v; want an error for the missing Capture", c, err)
	}
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
			l := bashCommand("/cwd-" + tt.name)
			l.Argv = clone(tt.argv)
			p, err := c.Prepare(context.Background(), tt.req, l)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Prepare() error = %v, want %v", err, tt.wantErr)
			}
			if p.Receipt.Outcome != tt.wantOutcome {
				t.Errorf("Prepare().Outcome = %q, want %q", p.Receipt.Outcome, tt.wantOutcome)
			}
			argv, _ := replayOf(tt.req, l, p)
			if tt.wantOutcome != OutcomeUsed && (p.Snapshot != nil || !reflect.DeepEqual(argv, tt.argv)) {
				t.Errorf("Prepare() gave snapshot %v, argv %q; want none, unchanged", p.Snapshot, argv)
			}
			if n := len(tt.argv) - 3; tt.wantOutcome == OutcomeUsed && n > 0 && !reflect.DeepEqual(argv[len(argv)-n:], tt.argv[3:]) {
				t.Errorf("replayed extra args = %q, want %q", argv[len(argv)-n:], tt.argv[3:])
			}
			if !reflect.DeepEqual(l.Argv, tt.argv) {
				t.Errorf("Prepare() changed the launch's argv to %q", l.Argv)
			}
		})
	}
}

// TestPrepareBashInPosixMode: with POSIXLY_CORRECT in its environment bash
// starts in posix mode, where a login shell reads no profile and a
// non-interactive one no BASH_ENV: a replay would restore nothing and leave
// BASH_ENV to the script's children. The command runs as asked, without a
// snapshot and without a capture; zsh and sh take no notice of it.
func TestPrepareBashInPosixMode(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	l := bashCommand("/posix")
	l.Env["POSIXLY_CORRECT"] = ""
	p, err := c.Prepare(context.Background(), bashRequest("s"), l)
	if err != nil || p.Receipt.Outcome != OutcomeIneligible || !strings.Contains(p.Receipt.Reason, "POSIXLY_CORRECT") || p.Snapshot != nil {
		t.Errorf("Prepare(bash, POSIXLY_CORRECT set) = %+v, %v; want ineligible, naming POSIXLY_CORRECT", p.Receipt, err)
	}
	if len(f.calls) != 0 {
		t.Errorf("captures = %v, want none", f.calls)
	}
	zsh := Launch{Argv: []string{"/usr/bin/zsh", "-lc", "true"}, Cwd: "/posix", Env: map[string]string{"HOME": "/h", "POSIXLY_CORRECT": ""}}
	if p, err := c.Prepare(context.Background(), &Request{ScopeID: "s", Shell: Shell{Name: "zsh", Path: "/usr/bin/zsh"}}, zsh); err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Errorf("Prepare(zsh, POSIXLY_CORRECT set) = %+v, %v; want used", p.Receipt, err)
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
	argvs, envs := make([][]string, n), make([]map[string]string, n)
	for i := range n {
		wg.Go(func() {
			l := bashCommand("/sf")
			p, err := c.Prepare(context.Background(), bashRequest("s"), l)
			if err != nil {
				t.Errorf("Prepare() error %v", err)
			}
			argvs[i], envs[i] = replayOf(bashRequest("s"), l, p)
			states <- p.Receipt.State
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
		if !reflect.DeepEqual(argvs[i], argvs[0]) || !reflect.DeepEqual(envs[i], envs[0]) {
			t.Fatalf("command %d differs from command 0 after the shared capture", i)
		}
	}
}

// TestImpatientWaiterDoesNotCancelCapture: a waiter whose request ends
// gets ErrWaitEnded and an unchanged command, which must not run (before
// issue 14 it fell back and ran); the capture goes on for the others.
func TestImpatientWaiterDoesNotCancelCapture(t *testing.T) {
	f := &fakeCapturer{release: make(chan struct{})}
	c := newTestCache(t, Options{Capture: f.capture})
	first := make(chan Receipt, 1)
	go func() { first <- mustPrepare(t, c, bashRequest("s"), bashCommand("/imp"), Execution) }()
	for f.count("/imp") == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		p   Prepared
		err error
	}
	waiterDone := make(chan answer, 1)
	go func() {
		p, err := c.Prepare(ctx, bashRequest("s"), bashCommand("/imp"))
		waiterDone <- answer{p, err}
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if a := <-waiterDone; !errors.Is(a.err, ErrWaitEnded) || !errors.Is(a.err, context.Canceled) || a.p.Receipt.Outcome != OutcomeNotRun || a.p.Snapshot != nil {
		t.Errorf("cancelled waiter = %q, %v with snapshot %v, want not_run, ErrWaitEnded with the cause, and no snapshot", a.p.Receipt.Outcome, a.err, a.p.Snapshot)
	}
	close(f.release)
	if r := <-first; r.Outcome != OutcomeUsed {
		t.Errorf("capturing caller = %q, want used after another waiter gave up", r.Outcome)
	}
}

// TestDeadlineBoundsTheCapturingCaller: the caller that starts a capture
// leaves at its own deadline too (before issue 14 it ran the capture on its
// own goroutine and waited for the whole capture limit), while the capture
// goes on and serves the next command from the cache.
func TestDeadlineBoundsTheCapturingCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCapturer{release: make(chan struct{})}
		c := newTestCache(t, Options{Capture: f.capture, Timeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		p, err := c.Prepare(ctx, bashRequest("s"), bashCommand("/dl"))
		r := p.Receipt
		if !errors.Is(err, ErrWaitEnded) || !errors.Is(err, context.DeadlineExceeded) || r.Outcome != OutcomeNotRun || r.State != StateOnDemand {
			t.Errorf("Prepare() past its deadline = %+v, %v; want not_run on_demand, ErrWaitEnded with the deadline", r, err)
		}
		if waited := time.Since(start); waited != time.Second || r.Wait != time.Second {
			t.Errorf("Prepare() returned after %v (receipt %v), want the 1s deadline", waited, r.Wait)
		}
		if p.Snapshot != nil {
			t.Errorf("a prepare that ended gave a snapshot to replay")
		}
		if e, _ := c.Entry(*bashRequest("s"), Launch{Cwd: "/dl"}); e.State != EntryPending {
			t.Errorf("entry after the caller left = %q, want pending: the capture goes on", e.State)
		}
		close(f.release)
		synctest.Wait()
		if r := mustPrepare(t, c, bashRequest("s"), bashCommand("/dl"), Execution); r.State != StateCacheHit || f.count("/dl") != 1 {
			t.Errorf("next command = %q after %d captures, want cache_hit after 1", r.State, f.count("/dl"))
		}
	})
}

func TestPrewarmStates(t *testing.T) {
	f := &fakeCapturer{}
	c := newTestCache(t, Options{Capture: f.capture})
	l := bashCommand("/pw")
	if r := mustPrepare(t, c, bashRequest("s"), l, Prewarm); r.Outcome != OutcomeUsed || l.Argv[2] != "true" {
		t.Errorf("Prewarm() = %q with argv %q, want success without a rewrite", r.Outcome, l.Argv)
	}
	if r := mustPrepare(t, c, bashRequest("s"), bashCommand("/pw"), Execution); r.State != StatePrewarmReady {
		t.Errorf("after a prewarm, State = %q, want prewarm_ready", r.State)
	}

	f.release = make(chan struct{})
	go func() { _, _ = c.Prewarm(context.Background(), *bashRequest("s"), bashCommand("/pw2")) }()
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
	l := bashCommand("/fail")
	want := bashCommand("/fail")
	p, err := c.Prepare(context.Background(), bashRequest("s"), l)
	if r := p.Receipt; err != nil || r.Outcome != OutcomeFallback || r.State != StateOnDemand || !strings.Contains(r.Reason, "exit status: 7") {
		t.Errorf("Prepare() = %+v, %v; want fallback on_demand with the reason", r, err)
	}
	if argv, env := replayOf(bashRequest("s"), l, p); p.Snapshot != nil || !reflect.DeepEqual(argv, want.Argv) || !reflect.DeepEqual(env, want.Env) || !reflect.DeepEqual(l, want) {
		t.Errorf("Prepare() changed the command: snapshot %v, %q %v, want none, %+v", p.Snapshot, argv, env, want)
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
	return newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t)), Timeout: timeout})
}

// realBashCommand is bash -lc script with HOME=home.
func realBashCommand(home, script string) Launch {
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	return Launch{Argv: []string{"/bin/bash", "-lc", script}, Cwd: home, Env: env}
}

func TestHangingProfileFallsBackAndLeavesNothing(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bashrc"), "sleep 30 & echo $! > \"$HOME/pid\"; wait\n")
	c := realCache(t, 500*time.Millisecond)
	start := time.Now()
	p, err := c.Prepare(context.Background(), bashRequest("s"), realBashCommand(home, "true"))
	if r := p.Receipt; err != nil || r.Outcome != OutcomeFallback || !strings.Contains(r.Reason, "timed out") {
		t.Errorf("hanging profile = %+v, %v; want fallback timed out", r, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hanging capture took %v, want about the 500ms limit", d)
	}
	if p.Snapshot != nil {
		t.Errorf("a failed capture gave a snapshot to replay")
	}
	assertPidGone(t, filepath.Join(home, "pid"))
}

func TestBackgroundJobHoldingStdout(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bashrc"), "sleep 30 & echo $! > \"$HOME/pid\"\nbg_fn() { echo bg; }\n")
	c := realCache(t, 5*time.Second)
	cmd := realBashCommand(home, "bg_fn")
	// A job that held the capture would run it into its 5 s timeout, and
	// the command would fall back.
	r := mustPrepare(t, c, bashRequest("s"), cmd, Execution)
	if r.Outcome != OutcomeUsed {
		t.Errorf("profile with a background job = %+v, want used", r)
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
	capture := func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		return captureOutput(captureNonce(argv), "bash", "", nil), nil
	}
	c := newTestCache(t, Options{Capture: capture, MaxConcurrentCaptures: 2, SlotWait: time.Minute})
	var wg sync.WaitGroup
	for i := range 5 {
		// One scope each: a scope's own share is half the slots.
		wg.Go(func() {
			mustPrepare(t, c, bashRequest("s"+strconv.Itoa(i)), bashCommand("/slot"+strconv.Itoa(i)), Execution)
		})
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
	if _, err := c.Prewarm(context.Background(), *bashRequest("pf"), bashCommand("/pf")); err == nil {
		t.Fatal("failed prewarm returned nil")
	}
	e, ok := c.Entry(*bashRequest("pf"), Launch{Cwd: "/pf"})
	if !ok || e.State != EntryFailed || !e.RetryAt.IsZero() || e.LastError == nil || e.Attempts != 1 {
		t.Errorf("entry after a failed prewarm = %+v, want failed, no retryAt, the error, attempt 1", e)
	}
	// Nothing was cached: the next command captures at once.
	mustPrepare(t, c, bashRequest("pf"), bashCommand("/pf"), Execution)
	if got := f.count("/pf"); got != 2 {
		t.Errorf("captures = %d, want 2", got)
	}
}

// hangingCapturer hangs the captures of cwds under /hang until hang closes
// (or their ctx ends), and hands the others to f.
func hangingCapturer(f *fakeCapturer, hang <-chan struct{}) Capturer {
	return func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
		if !strings.HasPrefix(cwd, "/hang") {
			return f.capture(ctx, argv, cwd, env, sb, newSession)
		}
		select {
		case <-hang:
		case <-ctx.Done():
		}
		return nil, &CaptureError{Reason: ReasonTimeout, Message: "shell snapshot capture timed out"}
	}
}

// TestOneScopeCannotStallAnother is issue 14's case: 4 prewarms of a scope
// whose profile hangs, then another scope's first command. Before, the four
// took every slot and the command waited the whole capture limit for one.
func TestOneScopeCannotStallAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, hang := &fakeCapturer{}, make(chan struct{})
		defer close(hang)
		c := newTestCache(t, Options{Capture: hangingCapturer(f, hang), MaxConcurrentCaptures: 4})
		for i := range 4 {
			if _, err := c.StartPrewarm(*bashRequest("hung"), bashCommand("/hang"+strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		start := time.Now()
		r := mustPrepare(t, c, bashRequest("other"), bashCommand("/other"), Execution)
		if r.Outcome != OutcomeUsed || r.State != StateOnDemand || f.count("/other") != 1 {
			t.Errorf("another scope's first command = %+v after %d captures, want used on_demand after 1", r, f.count("/other"))
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("another scope's first command waited %v for a slot, want none: the hung scope holds only its share", waited)
		}
	})
}

// TestCommandWaitsForASlotAtMostSlotWait: with every slot a command's scope
// may take held by hung captures, the command falls back after the slot
// wait, without spending an attempt or backing off, and its capture stays
// queued: it runs once a slot frees, for the next command.
func TestCommandWaitsForASlotAtMostSlotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, hang := &fakeCapturer{}, make(chan struct{})
		c := newTestCache(t, Options{Capture: hangingCapturer(f, hang), MaxConcurrentCaptures: 2})
		for _, scope := range []string{"a", "b"} {
			if _, err := c.StartPrewarm(*bashRequest(scope), bashCommand("/hang-"+scope)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		for i, wantState := range []State{StateOnDemand, StateCapturePending} {
			start := time.Now()
			r := mustPrepare(t, c, bashRequest("c"), bashCommand("/c"), Execution)
			if r.Outcome != OutcomeFallback || r.State != wantState || !strings.Contains(r.Reason, "no shell snapshot capture slot came free within 500ms") {
				t.Errorf("command %d without a slot = %+v, want fallback %s saying no slot came free", i, r, wantState)
			}
			if waited := time.Since(start); waited != DefaultSlotWait || r.Wait != DefaultSlotWait {
				t.Errorf("command %d waited %v for a slot (receipt %v), want the slot wait %v", i, waited, r.Wait, DefaultSlotWait)
			}
		}
		e, _ := c.Entry(*bashRequest("c"), Launch{Cwd: "/c"})
		if e.State != EntryPending || e.Attempts != 1 || e.LastError != nil || f.count("/c") != 0 {
			t.Errorf("entry after the slot waits = %+v with %d captures, want pending, attempt 1, no error, none run", e, f.count("/c"))
		}
		close(hang)
		synctest.Wait()
		if r := mustPrepare(t, c, bashRequest("c"), bashCommand("/c"), Execution); r.Outcome != OutcomeUsed || r.State != StateCacheHit || f.count("/c") != 1 {
			t.Errorf("command once a slot freed = %+v after %d captures, want used cache_hit after the queued one", r, f.count("/c"))
		}
	})
}

// TestPrewarmWaitsForASlotWithinTheCaptureLimit: a prewarm, asked for
// explicitly, waits longer than a command, but no longer than its capture
// may run, and caches nothing then.
func TestPrewarmWaitsForASlotWithinTheCaptureLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, hang := &fakeCapturer{}, make(chan struct{})
		defer close(hang)
		// The hung capture ignores its own limit, which would otherwise end
		// at the instant the prewarm's slot wait does.
		capture := func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
			if cwd == "/hang-a" {
				<-hang
			}
			return f.capture(ctx, argv, cwd, env, sb, newSession)
		}
		c := newTestCache(t, Options{Capture: capture, MaxConcurrentCaptures: 1, Timeout: 3 * time.Second})
		if _, err := c.StartPrewarm(*bashRequest("a"), bashCommand("/hang-a")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		_, err := c.Prewarm(context.Background(), *bashRequest("b"), bashCommand("/b"))
		var ce *CaptureError
		if !errors.As(err, &ce) || !strings.Contains(ce.Message, "waiting for a capture slot") {
			t.Errorf("prewarm without a slot = %v, want the slot's timeout", err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("prewarm waited %v for a slot, want the 3s capture limit", waited)
		}
		if e, _ := c.Entry(*bashRequest("b"), Launch{Cwd: "/b"}); e.State != EntryPending || e.Attempts != 1 || e.LastError != nil {
			t.Errorf("entry after the prewarm's slot wait = %+v, want pending, attempt 1, no error", e)
		}
	})
}

// TestCloseEndsCaptures: Close ends the capture in flight and the one
// queued for a slot; their callers are answered at once.
func TestCloseEndsCaptures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCapturer{release: make(chan struct{})}
		c := newTestCache(t, Options{Capture: f.capture, MaxConcurrentCaptures: 1})
		running := make(chan Receipt, 1)
		go func() { running <- mustPrepare(t, c, bashRequest("a"), bashCommand("/a"), Execution) }()
		synctest.Wait()
		queued := make(chan error, 1)
		go func() {
			_, err := c.Prewarm(context.Background(), *bashRequest("b"), bashCommand("/b"))
			queued <- err
		}()
		synctest.Wait()
		start := time.Now()
		c.Close()
		if r := <-running; r.Outcome != OutcomeFallback {
			t.Errorf("command whose capture Close ended = %+v, want fallback", r)
		}
		if err := <-queued; err == nil || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("queued prewarm after Close = %v, want an error saying the server shuts down", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Close answered the callers after %v, want at once", waited)
		}
		if f.count("/b") != 0 {
			t.Errorf("the queued capture ran after Close")
		}
	})
}

func TestRegistryCountsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCapturer{release: make(chan struct{})}
		c := newTestCache(t, Options{Capture: f.capture})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { mustPrepare(t, c, bashRequest("w"), bashCommand("/w"), Execution) })
		}
		synctest.Wait()
		if e, _ := c.Entry(*bashRequest("w"), Launch{Cwd: "/w"}); e.Waiting != 3 {
			t.Errorf("entry with 3 commands waiting shows %d waiting", e.Waiting)
		}
		close(f.release)
		wg.Wait()
		if e, _ := c.Entry(*bashRequest("w"), Launch{Cwd: "/w"}); e.Waiting != 0 || e.State != EntryReady {
			t.Errorf("entry after the capture = %q with %d waiting, want ready and none", e.State, e.Waiting)
		}
	})
}

// TestEntryKeyCannotBeGuessed: an entry's shown key is keyed by a secret of
// the cache, so that a set value of its policy (a token, say) cannot be
// recovered by hashing guesses against it; within one cache it is stable.
func TestEntryKeyCannotBeGuessed(t *testing.T) {
	l := bashCommand("/k")
	l.Policy = &envpolicy.Policy{Set: map[string]string{"API_TOKEN": "1234"}}
	keyIn := func(c *Cache) string {
		t.Helper()
		mustPrepare(t, c, bashRequest("s"), l, Execution)
		info, ok := c.Entry(*bashRequest("s"), l)
		if !ok {
			t.Fatal("Entry() found no entry after a prepare")
		}
		return info.Key
	}
	c := newTestCache(t, Options{Capture: (&fakeCapturer{}).capture})
	first := keyIn(c)
	if again := keyIn(c); again != first {
		t.Errorf("the key of one entry changed from %q to %q", first, again)
	}
	other := keyIn(newTestCache(t, Options{Capture: (&fakeCapturer{}).capture}))
	if other == first {
		t.Errorf("two caches show key %q for the same entry: it is a plain hash of the request, the cwd and the policy's values", first)
	}
}
