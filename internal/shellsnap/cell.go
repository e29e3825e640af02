package shellsnap

import (
	"context"
	"errors"
	"sync"
	"time"
)

// result is what one capture generation produced: a snapshot, or a failure
// with the time a retry is allowed.
type result struct {
	snap            *Snapshot
	byPrewarm       bool
	capturedAt      time.Time
	captureDuration time.Duration
	stamps          []fileStamp // the startup files as the capture found them
	err             *CaptureError
	retryAt         time.Time
	// skipped means no capture ran: no slot came free within the run's
	// bound, or the cache was closed.
	skipped bool
}

// sharing says who gets a run's result.
type sharing int

const (
	// kept: the cell keeps the result; every caller, now and later, gets it.
	kept sharing = iota
	// private: a failed prewarm. Only its caller gets the result; nothing is
	// kept, and one waiter starts the next run
	// (docs/design/snapshots.md#single-flight).
	private
	// shared: nothing ran. The run's waiters get the result; nothing is kept,
	// and the next caller starts afresh.
	shared
)

// cell is one capture generation's single-assignment result: a "once" that
// a failed prewarm leaves unset, so that a waiting command initializes it
// itself.
//
// Beyond the reference, the capture runs on its own, not on the goroutine of
// the caller that started it: every caller, that one included, may stop
// waiting (its deadline, its client, shutdown) while the capture goes on for
// the others and for the cache.
type cell struct {
	mu      sync.Mutex
	set     bool
	res     result
	run     *run // the capture in flight, or nil
	waiting int  // callers waiting for a run
}

// run is one capture of a cell.
type run struct {
	began chan struct{} // closed when the capture holds its slot and starts
	done  chan struct{} // closed when res and share are final
	res   result
	share sharing
}

// capture runs one capture; it calls began once it holds a slot, and returns
// its result and who gets it.
type capture func(began func()) (result, sharing)

// errNoSlot means a caller's patience ran out before its capture got a slot.
var errNoSlot = errors.New("no capture slot came free in time")

func newCell() *cell { return &cell{} }

// peek returns the result if set, whether a capture is in flight, and how
// many callers wait for it.
func (c *cell) peek() (res result, set, running bool, waiting int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res, c.set, c.run != nil, c.waiting
}

// start starts a run of fn unless the cell is set or one is in flight.
func (c *cell) start(fn capture) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set && c.run == nil {
		c.startLocked(fn)
	}
}

func (c *cell) startLocked(fn capture) *run {
	r := &run{began: make(chan struct{}), done: make(chan struct{})}
	c.run = r
	go func() {
		res, share := fn(sync.OnceFunc(func() { close(r.began) }))
		c.mu.Lock()
		r.res, r.share = res, share
		if share == kept {
			c.set, c.res = true, res
		}
		c.run = nil
		c.mu.Unlock()
		close(r.done)
	}()
	return r
}

// get returns the cell's result, starting a run of fn when none is in flight.
// ranInit reports whether the run whose result this is was started by this
// caller. A caller stops waiting, with ctx's cause, when ctx ends, and with
// errNoSlot when its run has not begun within patience (zero: no bound); the
// run goes on either way.
func (c *cell) get(ctx context.Context, patience time.Duration, fn capture) (res result, ranInit bool, err error) {
	c.mu.Lock()
	if c.set { // a hit: no timer, no count
		res := c.res
		c.mu.Unlock()
		return res, false, nil
	}
	c.waiting++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.waiting--
		c.mu.Unlock()
	}()
	var impatient <-chan time.Time
	if patience > 0 {
		t := time.NewTimer(patience)
		defer t.Stop()
		impatient = t.C
	}
	for {
		c.mu.Lock()
		if c.set {
			res := c.res
			c.mu.Unlock()
			return res, false, nil
		}
		r, mine := c.run, false
		if r == nil {
			r, mine = c.startLocked(fn), true
		}
		c.mu.Unlock()

		began := r.began
		if impatient == nil {
			began = nil
		}
	wait:
		for {
			select {
			case <-r.done:
				break wait
			case <-began:
				began, impatient = nil, nil // in a slot: patience is spent only on the queue
			case <-impatient:
				return result{}, mine, errNoSlot
			case <-ctx.Done():
				return result{}, mine, context.Cause(ctx)
			}
		}
		if mine || r.share != private {
			return r.res, mine, nil
		}
		// Someone else's failed prewarm: start (or join) the next run.
	}
}
