package client

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

var (
	errRefused = errors.New("connection refused")
	errBroke   = errors.New("unexpected EOF")
)

// dialer is a dial whose results are given in turn (nil after the list),
// noting when each call came.
type dialer struct {
	start   time.Time
	results []error
	at      []time.Duration
}

func (d *dialer) dial() error {
	d.at = append(d.at, time.Since(d.start))
	if len(d.at) > len(d.results) {
		return nil
	}
	return d.results[len(d.at)-1]
}

// then has the dials after those made so far give errs in turn.
func (d *dialer) then(errs ...error) {
	d.results = append(make([]error, len(d.at)), errs...)
}

func ms(ds ...int) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d) * time.Millisecond
	}
	return out
}

func repeat(err error, n int) []error { return slices.Repeat([]error{err}, n) }

func TestRedial(t *testing.T) {
	notFound := &Error{Status: 404, Code: ProblemCodeNotFound}
	// Answers from something on the way (no problem code): the server
	// behind it may be back at the next redial.
	badGateway := &Error{Status: 502, Title: "Bad Gateway"}
	proxyUnavailable := &Error{Status: 503, Title: "Service Unavailable"}
	gatewayTimeout := &Error{Status: 504, Title: "Gateway Timeout"}
	shuttingDown := &Error{Status: 503, Code: ProblemCodeShuttingDown}
	tests := []struct {
		name    string
		results []error
		wantAt  []time.Duration // when each dial came, after a break
		wantErr error           // nil: the redial succeeded
	}{
		{name: "at once after a break", wantAt: ms(0)},
		{name: "backing off", results: repeat(errRefused, 3), wantAt: ms(0, 100, 300, 700)},
		{name: "five failures give up", results: repeat(errRefused, 9), wantAt: ms(0, 100, 300, 700, 1500), wantErr: errRefused},
		{name: "a problem answer ends at once", results: []error{errRefused, notFound}, wantAt: ms(0, 100), wantErr: notFound},
		{name: "a proxy's 502 and 504 are failed redials", results: []error{badGateway, gatewayTimeout}, wantAt: ms(0, 100, 300)},
		{name: "a proxy's 503s give up as failures do", results: repeat(proxyUnavailable, 9), wantAt: ms(0, 100, 300, 700, 1500), wantErr: proxyUnavailable},
		{name: "the server's own 503 ends at once", results: []error{shuttingDown}, wantAt: ms(0), wantErr: shuttingDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var r redialer
				d := &dialer{start: time.Now(), results: tt.results}
				r.broke(errBroke)
				err := r.redial(t.Context(), "the test", d.dial)
				if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
					t.Errorf("redial() = %v, want %v", err, tt.wantErr)
				}
				if !slices.Equal(d.at, tt.wantAt) {
					t.Errorf("dials at %v, want %v", d.at, tt.wantAt)
				}
			})
		})
	}
}

// TestRedialHandshakeResets: the failures that give up are those in a
// row; a redial that connects starts the count again, though its
// connection then breaks with no output.
func TestRedialHandshakeResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r redialer
		d := &dialer{start: time.Now()}
		for round := range 4 {
			d.then(repeat(errRefused, maxFailedRedials-1)...)
			r.broke(errBroke)
			if err := r.redial(t.Context(), "the test", d.dial); err != nil {
				t.Fatalf("round %d: redial() = %v after %d failures, want a connection", round, err, maxFailedRedials-1)
			}
		}
		d.then(repeat(errRefused, maxFailedRedials)...)
		r.broke(errBroke)
		if err := r.redial(t.Context(), "the test", d.dial); !errors.Is(err, errRefused) {
			t.Errorf("redial() after %d failures = %v, want to give up", maxFailedRedials, err)
		}
	})
}

// TestRedialDroppedForever: a server that accepts and drops every
// connection is redialled forever, never more often than maxRedialBackoff
// once the backoff has grown; output delivered redials at once again.
func TestRedialDroppedForever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r redialer
		d := &dialer{start: time.Now()}
		for range 200 {
			r.broke(errBroke)
			if err := r.redial(t.Context(), "the test", d.dial); err != nil {
				t.Fatalf("redial() after %d quiet connections = %v, want it to go on", len(d.at), err)
			}
		}
		want := ms(0, 100, 300, 700, 1500, 3100)
		for i := len(want); i < len(d.at); i++ {
			want = append(want, want[i-1]+maxRedialBackoff)
		}
		if !slices.Equal(d.at, want) {
			t.Errorf("dials at %v, want %v", d.at, want)
		}
		r.delivered()
		r.broke(errBroke)
		before := time.Now()
		if err := r.redial(t.Context(), "the test", d.dial); err != nil || time.Since(before) != 0 {
			t.Errorf("redial() after output = %v after %v, want a connection at once", err, time.Since(before))
		}
	})
}

// TestRedialCancel: a context that ends during the backoff ends the redial.
func TestRedialCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var r redialer
		d := &dialer{start: time.Now(), results: repeat(errRefused, 2)}
		time.AfterFunc(50*time.Millisecond, cancel)
		r.broke(errBroke)
		if err := r.redial(ctx, "the test", d.dial); !errors.Is(err, context.Canceled) || len(d.at) != 1 {
			t.Errorf("redial() cancelled in its backoff = %v after %d dials, want context.Canceled after 1", err, len(d.at))
		}
	})
}
