package shellsnap

import (
	"context"
	"sync"
	"time"
)

// result is what one capture generation produced: a snapshot, or a failure
// with the time a retry is allowed.
type result struct {
	snap            *Snapshot
	captureEnv      map[string]string // the environment the capture started with
	byPrewarm       bool
	capturedAt      time.Time
	captureDuration time.Duration
	stamps          []fileStamp // the startup files as the capture found them
	err             *CaptureError
	retryAt         time.Time
}

// cell is one capture generation's single-assignment result: a "once" that a
// failed prewarm leaves unset, so that a waiting command initializes it itself.
type cell struct {
	mu      sync.Mutex
	running bool
	set     bool
	res     result
	changed chan struct{} // closed and replaced when running or set changes
}

func newCell() *cell { return &cell{changed: make(chan struct{})} }

// peek returns the result if set, and whether someone is capturing.
func (c *cell) peek() (res result, set, running bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res, c.set, c.running
}

// get returns the cell's result, running init when nobody else is. init
// returns the result to store, or keep=false for a failed prewarm: then
// nothing is stored, get returns init's result to this caller only, and one
// waiter (if any) runs its own init. ranInit reports whether this caller's init ran.
// A waiter whose ctx ends stops waiting and gets ctx's error.
func (c *cell) get(ctx context.Context, init func() (res result, keep bool)) (res result, ranInit bool, err error) {
	for {
		c.mu.Lock()
		if c.set {
			res := c.res
			c.mu.Unlock()
			return res, ranInit, nil
		}
		if !c.running {
			c.running = true
			c.mu.Unlock()
			res, keep := init()
			c.mu.Lock()
			c.running = false
			if keep {
				c.set, c.res = true, res
			}
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			return res, true, nil
		}
		wait := c.changed
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return result{}, false, ctx.Err()
		}
	}
}
