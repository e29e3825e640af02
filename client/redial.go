package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Redialling, as an event stream and an attachment do it: a connection that
// breaks is redialled at once, then after a backoff that doubles from
// redialBackoff up to maxRedialBackoff for as long as connections break or
// fail before any output is delivered. maxFailedRedials redials in a row
// that fail (no connection, no handshake) give up; a connection that opens
// and then breaks quietly only backs off.
const (
	maxFailedRedials = 5
	redialBackoff    = 100 * time.Millisecond
	maxRedialBackoff = 2 * time.Second
)

// redialer counts what the redialling of one stream depends on. It is for
// the stream's reading goroutine.
type redialer struct {
	// quiet counts the connections lost (broken after their handshake, or
	// failed before it) since output was last delivered: the backoff.
	quiet int
	// failed counts the redials in a row that failed; a handshake resets it.
	failed int
	// lastErr is why the last connection was lost.
	lastErr error
}

// delivered notes that output came: the next break is redialled at once.
func (r *redialer) delivered() { r.quiet = 0 }

// broke notes a connection that broke after its handshake, for err.
func (r *redialer) broke(err error) { r.quiet, r.lastErr = r.quiet+1, err }

// redial calls dial until it succeeds, waiting the backoff before each call
// but the first after output. It returns the server's problem answer (an
// *Error) and ctx's end at once; a gateway's error on the way (onTheWay) is a
// failed redial, as a refused connection is. It gives up on `what` (such as
// "the attachment to ID") after maxFailedRedials failures in a row, with the
// last one's error.
func (r *redialer) redial(ctx context.Context, what string, dial func() error) error {
	for {
		if r.quiet > 1 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff(r.quiet - 1)):
			}
		}
		err := dial()
		var problem *Error
		switch {
		case err == nil:
			r.failed = 0
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &problem) && !problem.onTheWay():
			return err
		}
		r.quiet, r.failed, r.lastErr = r.quiet+1, r.failed+1, err
		if r.failed >= maxFailedRedials {
			return fmt.Errorf("snapexec: gave up on %s after %d failed redials in a row: %w", what, r.failed, err)
		}
	}
}

// backoff is the wait before the nth redial in a row that follows no
// output (n ≥ 1): redialBackoff, doubled each time up to maxRedialBackoff.
// It never overflows, however long a server accepts and drops.
func backoff(n int) time.Duration {
	d := redialBackoff
	for i := 1; i < n && d < maxRedialBackoff; i++ {
		d *= 2
	}
	return min(d, maxRedialBackoff)
}

// onTheWay reports whether e is a gateway's answer rather than the server's:
// a 502, 503 or 504 without a problem code, from a proxy whose server may be
// back at the next redial.
func (e *Error) onTheWay() bool {
	switch e.Status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return e.Code == ""
	}
	return false
}
