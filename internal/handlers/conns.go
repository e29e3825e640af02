package handlers

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ConnLimit caps the server's open connections. A listener that stops
// accepting at the cap (netutil.LimitListener) would let a thousand idle
// connections that no one authorised lock a client with the token out. So at
// the cap a new connection is let in, and another one is closed: the one least
// likely to be a client's at work, among those that are not serving a request
// (net/http's StateNew and StateIdle):
//
//  1. a connection none of whose requests carried the token (see
//     vouchForConn), the one longest in its state first;
//  2. else a vouched-for idle one, longest idle first (HTTP lets a server
//     close an idle connection at any time; clients reconnect).
//
// When every connection is serving a request, the new one is closed instead.
// A connection a handler takes over (the attach WebSocket) counts as one
// serving a request until that handler returns (see releaseHijacked):
// net/http forgets a hijacked connection, and without this each attachment
// would be a connection beyond the cap.
// Install it with http.Server's ConnContext and ConnState, and
// releaseHijacked around each route that hijacks.
type ConnLimit struct {
	max  int
	shed metric.Int64Counter

	mu    sync.Mutex // guards conns, open, and each entry's state, since and closing
	conns map[net.Conn]*connEntry
	open  int // conns less those being closed
}

// connEntry is what the limit knows of one connection.
type connEntry struct {
	limit   *ConnLimit
	conn    net.Conn
	state   http.ConnState // StateNew, StateActive, StateIdle or StateHijacked
	since   time.Time      // when it entered state
	closing bool           // shed, and not yet seen closed
	vouched atomic.Bool    // set by its requests, outside the mutex
}

type connKey struct{}

// Shed connections are counted by which kind was closed.
var (
	shedUnvouched = metric.WithAttributeSet(attribute.NewSet(attribute.String("victim", "unvouched")))
	shedIdle      = metric.WithAttributeSet(attribute.NewSet(attribute.String("victim", "idle")))
	shedIncoming  = metric.WithAttributeSet(attribute.NewSet(attribute.String("victim", "incoming")))
)

// NewConnLimit returns a limit of n open connections (at least 1) that
// counts the connections it closes on meter.
func NewConnLimit(n int, meter metric.Meter) (*ConnLimit, error) {
	shed, err := meter.Int64Counter("snapexec.http.connections.shed", metric.WithUnit("{connection}"),
		metric.WithDescription("Connections closed because the server had --max-connections open, by which was closed"))
	if err != nil {
		return nil, err
	}
	return &ConnLimit{max: max(n, 1), shed: shed, conns: map[net.Conn]*connEntry{}}, nil
}

// ConnContext is http.Server's ConnContext: it gives the connection's
// requests a way to vouch for it.
func (l *ConnLimit) ConnContext(ctx context.Context, c net.Conn) context.Context {
	e := &connEntry{limit: l, conn: c, state: http.StateNew, since: time.Now()}
	l.mu.Lock()
	l.conns[c] = e
	l.mu.Unlock()
	return context.WithValue(ctx, connKey{}, e)
}

// ConnState is http.Server's ConnState: it keeps each connection's state, and
// makes room for a new one at the cap.
func (l *ConnLimit) ConnState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.conns[c]
	if e == nil {
		return // not seen by ConnContext: not ours to count
	}
	switch s {
	case http.StateNew:
		l.open++
		if l.open > l.max {
			l.shedOne(c, e)
		}
	case http.StateClosed:
		l.forgetLocked(e)
	default:
		e.state, e.since = s, time.Now()
	}
}

// forgetLocked stops counting e's connection; l.mu is held.
func (l *ConnLimit) forgetLocked(e *connEntry) {
	if l.conns[e.conn] != e {
		return
	}
	if !e.closing {
		l.open--
	}
	delete(l.conns, e.conn)
}

// releaseHijacked is middleware that stops counting a connection its
// handler took over once the handler returns: by then the handler has
// closed it (an attachment's WebSocket ends with its handler).
func releaseHijacked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if e, ok := r.Context().Value(connKey{}).(*connEntry); ok {
				e.limit.mu.Lock()
				if e.state == http.StateHijacked {
					e.limit.forgetLocked(e)
				}
				e.limit.mu.Unlock()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// shedOne closes one connection to make room for incoming; l.mu is held.
func (l *ConnLimit) shedOne(incoming net.Conn, in *connEntry) {
	var victim net.Conn
	var ve *connEntry
	for c, e := range l.conns {
		if c == incoming || e.closing || (e.state != http.StateNew && e.state != http.StateIdle) {
			continue
		}
		if ve == nil || sheddable(e, ve) {
			victim, ve = c, e
		}
	}
	opt := shedIncoming
	switch {
	case ve == nil:
		victim, ve = incoming, in
	case ve.vouched.Load():
		opt = shedIdle
	default:
		opt = shedUnvouched
	}
	ve.closing = true
	l.open--
	l.shed.Add(context.Background(), 1, opt)
	// Closing wakes the connection's goroutine from its read; its
	// StateClosed then forgets it.
	_ = victim.Close()
}

// sheddable reports whether a is to be closed before b.
func sheddable(a, b *connEntry) bool {
	if av, bv := a.vouched.Load(), b.vouched.Load(); av != bv {
		return !av
	}
	return a.since.Before(b.since)
}

// requestConn is the connection r came on, as the ConnLimit saw it accepted;
// nil without a ConnLimit.
func requestConn(r *http.Request) net.Conn {
	if e, ok := r.Context().Value(connKey{}).(*connEntry); ok {
		return e.conn
	}
	return nil
}

// vouchForConn marks the connection of a request that carried the token as a
// client's (see ConnLimit).
func vouchForConn(ctx context.Context) {
	if e, ok := ctx.Value(connKey{}).(*connEntry); ok {
		e.vouched.Store(true)
	}
}
