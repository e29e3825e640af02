package shellsnap

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/metric"
)

// The reference's cache constants (SHELL-SNAPSHOTS.md 1).
const (
	MaxCachedSnapshots   = 16
	SnapshotRetryBackoff = time.Second
	MaxSnapshotAttempts  = 3
	SnapshotTimeout      = 10 * time.Second
)

// Capturer runs a capture command and returns its stdout; the real one is
// RunCapture. Tests substitute fakes.
type Capturer func(ctx context.Context, argv []string, cwd string, env map[string]string) ([]byte, error)

// Options configures a Cache.
type Options struct {
	// Capture runs captures; nil means RunCapture.
	Capture Capturer
	// Now is the clock of backoffs; nil means time.Now. Capture durations
	// always use the real clock.
	Now func() time.Time
	// Meter records the snapshot metrics; nil records nothing.
	Meter metric.Meter
	// Timeout bounds one capture; zero means SnapshotTimeout.
	Timeout time.Duration
}

// Cache holds the shell snapshots of up to MaxCachedSnapshots keys, least
// recently used first. Its mutex guards lookup, insert, reset and evict only:
// it is never held during a capture.
type Cache struct {
	capture Capturer
	now     func() time.Time
	timeout time.Duration
	metrics *metrics

	mu      sync.Mutex
	entries *list.List // of *entry, front = least recently used
}

// entry is one key's snapshot generation and what the registry shows of it.
type entry struct {
	key      key
	attempts int
	cell     *cell
}

// New returns an empty Cache.
func New(opts Options) (*Cache, error) {
	c := &Cache{capture: opts.Capture, now: opts.Now, timeout: opts.Timeout, entries: list.New()}
	if c.timeout <= 0 {
		c.timeout = SnapshotTimeout
	}
	if c.capture == nil {
		c.capture = RunCapture
	}
	if c.now == nil {
		c.now = time.Now
	}
	m, err := newMetrics(opts.Meter)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	return c, nil
}

// Prepare applies req's snapshot to cmd (SHELL-SNAPSHOTS.md 2, 3, 7). For
// Execution it returns an error only for an invalid scope or an unsupported
// shell: a capture that fails leaves cmd unchanged and the receipt says
// fallback. For Prewarm it also returns the capture's own failure, and it
// never rewrites cmd.
func (c *Cache) Prepare(ctx context.Context, req *Request, cmd *Command, purpose Purpose) (Receipt, error) {
	if req == nil {
		return Receipt{Outcome: OutcomeNotRequested}, nil
	}
	if req.ScopeID == "" || len(req.ScopeID) > MaxScopeBytes {
		return Receipt{}, ErrInvalidScope
	}
	if ok, why := eligible(*req, cmd.Argv); !ok {
		return Receipt{Outcome: OutcomeIneligible, Reason: why}, nil
	}
	if !supportedShell(req.Shell.Name) {
		return Receipt{}, ErrUnsupportedShell
	}

	started := time.Now()
	cl, attempt := c.lookup(keyOf(*req, cmd.Cwd, cmd.Policy), purpose)
	state := stateOf(cl)
	res, ranInit, err := cl.get(ctx, func() (result, bool) {
		return c.runCapture(ctx, *req, cmd, purpose, attempt)
	})
	wait := time.Since(started)
	if err != nil { // this waiter's client went away
		return Receipt{Outcome: OutcomeFallback, State: state, Wait: wait, Reason: "request cancelled while waiting for the capture"}, nil
	}
	switch {
	case ranInit:
		state = StateOnDemand
	case state == StateCapturePending && res.byPrewarm:
		state = StatePrewarmPending
	}

	if purpose == Prewarm {
		if res.err != nil && ranInit {
			return Receipt{Outcome: OutcomeFallback, State: state, Wait: wait, Reason: res.err.Message}, res.err
		}
		return Receipt{Outcome: OutcomeUsed, State: state, Wait: wait}, nil
	}
	if res.err != nil {
		c.metrics.command(ctx, state, OutcomeFallback, wait)
		return Receipt{Outcome: OutcomeFallback, State: state, Wait: wait, Reason: res.err.Message}, nil
	}
	cmd.Argv, cmd.Env = Replay(ReplayInput{
		Snapshot:   res.snap,
		Shell:      req.Shell.Name,
		Command:    cmd.Argv,
		ShellStart: 0,
		Env:        cmd.Env,
		RequestEnv: cmd.RequestEnv,
		CaptureEnv: res.captureEnv,
	})
	c.metrics.command(ctx, state, OutcomeUsed, wait)
	return Receipt{Outcome: OutcomeUsed, State: state, Wait: wait}, nil
}

// lookup finds or inserts key's entry under the mutex, starting a new retry
// generation when the rules of SHELL-SNAPSHOTS.md 3.2 allow one.
func (c *Cache) lookup(k key, purpose Purpose) (*cell, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.entries.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		if e.key != k {
			continue
		}
		c.entries.MoveToBack(el)
		if purpose == Execution && e.attempts < MaxSnapshotAttempts {
			if res, set, _ := e.cell.peek(); set && res.err != nil && !c.now().Before(res.retryAt) {
				e.attempts++
				e.cell = newCell()
			}
		}
		return e.cell, e.attempts
	}
	e := &entry{key: k, attempts: 1, cell: newCell()}
	c.entries.PushBack(e)
	if c.entries.Len() > MaxCachedSnapshots {
		// Eviction does not cancel a capture in flight: its holders still get
		// the result, which is simply no longer cached.
		c.entries.Remove(c.entries.Front())
	}
	return e.cell, e.attempts
}

// stateOf is the availability a command finds right after lookup.
func stateOf(cl *cell) State {
	res, set, _ := cl.peek()
	switch {
	case !set:
		return StateCapturePending // becomes on_demand if this caller captures
	case res.err != nil:
		return StateUnavailable
	case res.byPrewarm:
		return StatePrewarmReady
	default:
		return StateCacheHit
	}
}

// runCapture is one executed capture: it runs the capture script as the
// command's own login shell, parses the output, records the telemetry, and
// returns what the cell keeps (a failed prewarm keeps nothing).
func (c *Cache) runCapture(ctx context.Context, req Request, cmd *Command, purpose Purpose, attempt int) (result, bool) {
	script, _ := CaptureScript(req.Shell.Name)
	argv := append([]string{}, cmd.Argv...)
	argv[2] = script
	// The capture outlives an impatient client: others may be waiting on it.
	captureCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()

	started := time.Now()
	out, err := c.capture(captureCtx, argv, cmd.Cwd, cmd.Env)
	var snap *Snapshot
	if err == nil {
		snap, err = Parse(out, cmd.Policy)
	}
	elapsed := time.Since(started)
	c.metrics.captured(ctx, elapsed, err == nil)

	if err == nil {
		return result{snap: snap, captureEnv: cmd.Env, byPrewarm: purpose == Prewarm}, true
	}
	var ce *CaptureError
	if !errors.As(err, &ce) {
		ce = &CaptureError{Reason: ReasonReadFailed, Message: err.Error()}
	}
	zerolog.Ctx(ctx).Warn().
		Str("reason", string(ce.Reason)).
		Str("shell", req.Shell.Name).
		Int("attempt", attempt).
		Bool("prewarm", purpose == Prewarm).
		Msg("failed to capture shell snapshot: " + ce.Message)
	if purpose == Prewarm {
		return result{err: ce}, false
	}
	return result{err: ce, retryAt: c.now().Add(SnapshotRetryBackoff)}, true
}
