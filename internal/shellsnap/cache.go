package shellsnap

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// The reference's cache constants (docs/design/snapshots.md#cache-key,
// #retries-and-backoff, #capture).
const (
	MaxCachedSnapshots   = 16
	SnapshotRetryBackoff = time.Second
	MaxSnapshotAttempts  = 3
	SnapshotTimeout      = 10 * time.Second
)

// DefaultSlotWait is how long a command waits for its capture to get a slot
// before it runs without the snapshot: long enough for a quick capture ahead
// of it to finish, short against a hung one.
const DefaultSlotWait = 500 * time.Millisecond

// Capturer runs a capture command and returns its stdout; the real one is
// NewCapturer's, on the server's exec.Manager. Tests substitute fakes.
// It runs the capture confined by sb, the command's sandbox, and with
// newSession in a session of its own without a controlling terminal
// (exec.Spec.NewSession), as an interactive shell's capture must run.
type Capturer func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error)

// Options configures a Cache.
type Options struct {
	// Capture runs captures; it is required, so that every capture is a
	// process of a manager that the server's shutdown and keeper reach.
	Capture Capturer
	// Now is the clock of backoffs; nil means time.Now. Capture durations
	// always use the real clock.
	Now func() time.Time
	// Meter records the snapshot metrics and Tracer the prepare, capture and
	// replay spans; nil records nothing.
	Meter  metric.Meter
	Tracer trace.Tracer
	// Timeout bounds one capture from the moment it holds a slot (reading
	// its output and waiting for its exit, as the reference's
	// SNAPSHOT_TIMEOUT); zero means SnapshotTimeout. A capture waits at most
	// as long again for its slot.
	Timeout time.Duration
	// MaxConcurrentCaptures bounds the captures running at once (captures of
	// different keys; one key never has two), and a scope holds at most half
	// of them, rounded up (slots); zero means no bound.
	MaxConcurrentCaptures int
	// SlotWait is how long a command waits for its capture to get a slot
	// before it runs without the snapshot; zero means DefaultSlotWait. The
	// capture stays queued for later commands. A prewarm, asked for
	// explicitly, waits as long as its capture may.
	SlotWait time.Duration
	// Private holds the restore files (NewPrivateDirs); zero makes them a
	// directory of their own in the temporary directory.
	Private PrivateDirs
}

// errNoCapturer refuses a Cache without Options.Capture.
var errNoCapturer = errors.New("shellsnap: Options.Capture is required")

// Cache holds the shell snapshots of up to MaxCachedSnapshots keys, least
// recently used first. Its mutex guards lookup, insert, reset and evict only:
// it is never held during a capture.
type Cache struct {
	capture  Capturer
	now      func() time.Time
	timeout  time.Duration
	slotWait time.Duration
	metrics  *metrics
	tracer   trace.Tracer
	// idSecret keys the ids that entries show (keyID).
	idSecret []byte

	history *captureHistory
	slots   *slots
	files   restoreFiles
	// life ends with Close: captures in flight or queued end with it.
	life  context.Context
	close context.CancelFunc

	mu      sync.Mutex
	entries *list.List // of *entry, front = least recently used
}

// New returns an empty Cache; opts.Capture is required.
func New(opts Options) (*Cache, error) {
	if opts.Capture == nil {
		return nil, errNoCapturer
	}
	c := &Cache{capture: opts.Capture, now: opts.Now, timeout: opts.Timeout, slotWait: opts.SlotWait, entries: list.New(), history: newCaptureHistory(), slots: newSlots(opts.MaxConcurrentCaptures), idSecret: keyIDSecret()}
	c.files.in = opts.Private
	c.life, c.close = context.WithCancel(context.Background())
	if c.timeout <= 0 {
		c.timeout = SnapshotTimeout
	}
	if c.slotWait <= 0 {
		c.slotWait = DefaultSlotWait
	}
	c.tracer = opts.Tracer
	if c.tracer == nil {
		c.tracer = nooptrace.NewTracerProvider().Tracer("")
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

// Prepare answers which snapshot a launch uses, and what happened
// (docs/design/snapshots.md#prepare): the receipt, and for the outcome used
// the snapshot with the environment its capture started with, from which the
// caller builds the command with Replay. The cache never rewrites the launch.
// It returns an error for an invalid scope or an unsupported shell, and
// ErrWaitEnded (with ctx's cause) when ctx ends while it waits for the
// capture: then the command must not run, and the receipt says not_run. A
// capture that fails, or that gets no slot within the slot wait, gives no
// snapshot and the receipt says fallback. A nil req is not requested.
func (c *Cache) Prepare(ctx context.Context, req *Request, l Launch) (Prepared, error) {
	if r, err := check(req, l); err != nil || r.Outcome != "" {
		return Prepared{Receipt: r}, err
	}
	started := time.Now()
	e, cl, attempt := c.lookup(*req, l, Execution)
	return c.await(ctx, *req, l, Execution, e, cl, attempt, started)
}

// Prewarm captures the snapshot that l would use, or waits for the capture
// in flight, until ctx ends (docs/design/snapshots.md#prewarm). Unlike
// Prepare it returns the failure of its own capture, which is not cached;
// it returns no snapshot: a prewarm never replays.
func (c *Cache) Prewarm(ctx context.Context, req Request, l Launch) (Receipt, error) {
	if r, err := check(&req, l); err != nil || r.Outcome != "" {
		return r, err
	}
	started := time.Now()
	e, cl, attempt := c.lookup(req, l, Prewarm)
	p, err := c.await(ctx, req, l, Prewarm, e, cl, attempt, started)
	return p.Receipt, err
}

// StartPrewarm starts a prewarm capture (or joins the one in flight) without
// waiting for it, and returns the entry as it is now.
func (c *Cache) StartPrewarm(req Request, l Launch) (EntryInfo, error) {
	if _, err := check(&req, l); err != nil {
		return EntryInfo{}, err
	}
	e, cl, attempt := c.lookup(req, l, Prewarm)
	cl.start(func(began func()) (result, sharing) {
		return c.runCapture(context.Background(), req, l, Prewarm, e, attempt, began)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	info := e.info()
	if _, set, _, _ := cl.peek(); !set {
		info.State = EntryPending // the capture may not have begun yet
	}
	return info, nil
}

// await waits for (or starts) the capture of cell cl and answers with its
// result.
func (c *Cache) await(ctx context.Context, req Request, l Launch, purpose Purpose, e *entry, cl *cell, attempt int, started time.Time) (Prepared, error) {
	state := stateOf(cl)
	patience := c.slotWait
	if purpose == Prewarm {
		patience = 0 // asked for explicitly: it waits as long as its capture may
	}
	res, ranInit, err := cl.get(ctx, patience, func(began func()) (result, sharing) {
		return c.runCapture(ctx, req, l, purpose, e, attempt, began)
	})
	wait := time.Since(started)
	switch {
	case ranInit:
		state = StateOnDemand
	case state == StateCapturePending && res.byPrewarm:
		state = StatePrewarmPending
	}
	switch {
	case errors.Is(err, errNoSlot):
		// No capture ran for this command, so no attempt is spent and nothing
		// backs off: the capture stays queued for the next command.
		res = result{err: &CaptureError{Reason: ReasonTimeout, Message: fmt.Sprintf("no shell snapshot capture slot came free within %v", c.slotWait)}, skipped: true}
	case err != nil:
		return Prepared{Receipt: Receipt{Outcome: OutcomeNotRun, State: state, Wait: wait}}, fmt.Errorf("%w: %w", ErrWaitEnded, err)
	}

	if purpose == Prewarm {
		if res.err != nil && (ranInit || res.skipped) {
			return Prepared{Receipt: Receipt{Outcome: OutcomeFallback, State: state, Wait: wait, Reason: res.err.Message}}, res.err
		}
		return Prepared{Receipt: Receipt{Outcome: OutcomeUsed, State: state, Wait: wait}}, nil
	}
	if res.err != nil {
		c.metrics.command(ctx, state, OutcomeFallback, wait)
		c.history.command(state, OutcomeFallback)
		return Prepared{Receipt: Receipt{Outcome: OutcomeFallback, State: state, Wait: wait, Reason: res.err.Message}}, nil
	}
	if !ranInit {
		c.hit(e)
	}
	outcome := OutcomeUsed
	if len(res.snap.Unrestored) > 0 {
		outcome = OutcomePartial
	}
	c.metrics.command(ctx, state, outcome, wait)
	// The history counts a partial replay as used: the snapshot was.
	c.history.command(state, OutcomeUsed)
	return Prepared{Receipt: Receipt{Outcome: outcome, State: state, Wait: wait, Unrestored: res.snap.Unrestored}, Snapshot: res.snap}, nil
}

// lookup finds or inserts the launch's entry, starting a new retry
// generation when the rules of docs/design/snapshots.md#retries-and-backoff
// allow one, and a new entry when a ready snapshot's startup files changed
// since its capture. It returns the entry, the cell to wait on and the
// attempt it belongs to.
func (c *Cache) lookup(req Request, l Launch, purpose Purpose) (*entry, *cell, int) {
	k := keyOf(req, l)
	e, cl, attempt := c.find(k, req, l, purpose)
	// The staleness check stats a few files: outside the mutex, so that hits
	// on other keys do not queue behind it.
	if res, set, _, _ := cl.peek(); set && res.err == nil && stale(res.stamps) {
		return c.renew(k, e, cl, req, l, purpose)
	}
	return e, cl, attempt
}

// find is lookup's part under the mutex.
func (c *Cache) find(k key, req Request, l Launch, purpose Purpose) (*entry, *cell, int) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.entries.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		if e.key != k {
			continue
		}
		c.entries.MoveToBack(el)
		e.lastUsedAt = now
		if purpose == Execution && e.attempts < MaxSnapshotAttempts {
			if res, set, _, _ := e.cell.peek(); set && res.err != nil && !now.Before(res.retryAt) {
				e.attempts++
				e.cell = newCell()
			}
		}
		return e, e.cell, e.attempts
	}
	e := &entry{key: k, id: keyID(c.idSecret, k), req: req, policy: l.Policy, sandbox: l.Sandbox, attempts: 1, cell: newCell(), lastUsedAt: now}
	c.entries.PushBack(e)
	if c.entries.Len() > MaxCachedSnapshots {
		// Eviction does not cancel a capture in flight: its holders still get
		// the result, which is simply no longer cached.
		c.entries.Remove(c.entries.Front())
	}
	return e, e.cell, e.attempts
}

// renew replaces a stale entry: beyond the reference, an edited profile is
// captured afresh, as a new entry with a fresh retry budget (failed entries
// keep the reference's backoff and budget exactly). If another caller renewed,
// evicted or forgot it meanwhile, the lookup starts over.
func (c *Cache) renew(k key, stale *entry, cl *cell, req Request, l Launch, purpose Purpose) (*entry, *cell, int) {
	c.mu.Lock()
	for el := c.entries.Front(); el != nil; el = el.Next() {
		if el.Value == stale && stale.cell == cl {
			e := &entry{key: k, id: keyID(c.idSecret, k), req: req, policy: l.Policy, sandbox: l.Sandbox, attempts: 1, cell: newCell(), lastUsedAt: c.now()}
			el.Value = e
			c.mu.Unlock()
			return e, e.cell, e.attempts
		}
	}
	c.mu.Unlock()
	return c.lookup(req, l, purpose)
}

func (c *Cache) hit(e *entry) {
	c.mu.Lock()
	e.hits++
	c.mu.Unlock()
}

// stateOf is the availability a command finds right after lookup.
func stateOf(cl *cell) State {
	res, set, _, _ := cl.peek()
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

// runCapture is one capture run: it waits for a slot, within the capture's
// own limit, then runs the capture script as the command's own login shell,
// parses the output, records the telemetry, and returns what the cell keeps
// (a failed prewarm keeps nothing, and a run that got no slot neither).
func (c *Cache) runCapture(ctx context.Context, req Request, l Launch, purpose Purpose, e *entry, attempt int, began func()) (result, sharing) {
	// The capture outlives an impatient client, since others may be waiting
	// on it, but not the cache.
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	defer end()
	defer context.AfterFunc(c.life, end)()
	release, qerr := c.queue(life, req.ScopeID)
	if qerr != nil {
		return result{err: qerr, skipped: true}, shared
	}
	defer release()
	began()

	ctx, span := c.tracer.Start(ctx, "codex.exec_server.process_capture_shell_snapshot", trace.WithAttributes(
		attribute.String("shell", req.Shell.Name), attribute.String("purpose", purpose.String()), attribute.Int("attempt", attempt)))
	defer span.End()
	captureCtx, cancel := context.WithTimeout(life, c.timeout)
	defer cancel()
	started := time.Now()
	snap, stamps, err := snapshotCapture{
		run: c.capture, files: &c.files, shell: req.Shell.Name,
		argv: l.Argv, cwd: l.Cwd, env: l.Env, policy: l.Policy, sandbox: l.Sandbox, terminal: l.Terminal,
	}.capture(captureCtx)
	elapsed := time.Since(started)
	c.metrics.captured(ctx, elapsed, err == nil)
	c.history.add(captureRecord{at: started, duration: elapsed, ok: err == nil})

	if err == nil {
		return result{
			snap: snap, byPrewarm: purpose == Prewarm,
			capturedAt: started, captureDuration: elapsed, stamps: stamps,
		}, kept
	}
	var ce *CaptureError
	if !errors.As(err, &ce) {
		ce = &CaptureError{Reason: ReasonReadFailed, Message: err.Error()}
	}
	c.mu.Lock()
	e.lastError = ce
	c.mu.Unlock()
	span.SetAttributes(attribute.String("failure_reason", string(ce.Reason)))
	span.SetStatus(codes.Error, string(ce.Reason))
	zerolog.Ctx(ctx).Warn().
		Str("reason", string(ce.Reason)).
		Str("shell", req.Shell.Name).
		Int("attempt", attempt).
		Bool("prewarm", purpose == Prewarm).
		Msg("failed to capture shell snapshot: " + ce.Message)
	if purpose == Prewarm {
		return result{err: ce}, private
	}
	return result{err: ce, retryAt: c.now().Add(SnapshotRetryBackoff)}, kept
}

// queue waits for a capture slot of scope, at most the capture's own limit,
// and not past Close.
func (c *Cache) queue(ctx context.Context, scope string) (release func(), err *CaptureError) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	release, aerr := c.slots.acquire(ctx, scope)
	// Checked after the slot too: the capture that Close ended hands its
	// slot on before this run's ctx learns of the Close.
	if c.life.Err() != nil {
		if aerr == nil {
			release()
		}
		return nil, &CaptureError{Reason: ReasonTimeout, Message: "shell snapshot capture cancelled: the server is shutting down"}
	}
	if aerr != nil {
		return nil, &CaptureError{Reason: ReasonTimeout, Message: "shell snapshot capture timed out waiting for a capture slot"}
	}
	return release, nil
}

// Close ends the captures in flight and those queued for a slot, and starts
// no more: their waiters fall back, and a prewarm gets its error. Lookups
// and the registry keep working; the restore files go.
func (c *Cache) Close() {
	c.close()
	c.files.close()
}
