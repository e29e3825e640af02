package handlers

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/snapexec/snapexec/internal/service"
)

// newConnLimit returns a limit of n and a reader of its shed counter.
func newConnLimit(t *testing.T, n int) (*ConnLimit, func() map[string]int64) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	l, err := NewConnLimit(n, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	shed := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					v, _ := dp.Attributes.Value("victim")
					out[v.AsString()] += dp.Value
				}
			}
		}
		return out
	}
	return l, shed
}

// waitIdle waits until n of limit's connections are idle, so that the order
// in which connections went idle is the order the test made them.
func waitIdle(t *testing.T, limit *ConnLimit, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		limit.mu.Lock()
		idle := 0
		for _, e := range limit.conns {
			if e.state == http.StateIdle {
				idle++
			}
		}
		limit.mu.Unlock()
		if idle == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle, want %d", idle, n)
		}
	}
}

const authedExec = "POST /exec HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer " + testToken +
	"\nContent-Type: application/json\nContent-Length: 17\n"

// TestConnLimitShedsUnvouchedFirst: at the cap, connections that never
// carried the token are closed first, the oldest first; a client's idle
// keep-alive connection survives them, and its new connections get in.
func TestConnLimitShedsUnvouchedFirst(t *testing.T) {
	limit, shed := newConnLimit(t, 4)
	srv := serveRouter(t, newRouterWith(t, okExecutor(), RouterOptions{Security: Security{Token: testToken}}), limit)

	client, clientR := rawRequest(t, srv, authedExec, `{"argv":["true"]}`)
	if resp, body := readAnswer(t, client, clientR); resp.StatusCode != 200 {
		t.Fatalf("authorised /exec = %d %s", resp.StatusCode, body)
	}
	// A public path does not vouch for a connection: only the token does.
	probe, probeR := rawRequest(t, srv, "GET /healthz HTTP/1.1\nHost: 127.0.0.1\n", "")
	if resp, _ := readAnswer(t, probe, probeR); resp.StatusCode != 200 {
		t.Fatalf("GET /healthz = %d", resp.StatusCode)
	}
	waitIdle(t, limit, 2)
	var stillOpen [3]func() bool // of three connections that never send a byte
	for i := range stillOpen {
		c, br := rawRequest(t, srv, "", "")
		stillOpen[i] = func() bool { return !closedWithin(c, br, 200*time.Millisecond) }
	}
	// Four were open when the third idle one came: the probe went, the
	// oldest unvouched connection.
	if !closedWithin(probe, probeR, 5*time.Second) {
		t.Errorf("the unvouched probe connection is open, want it shed first")
	}
	late, lateR := rawRequest(t, srv, authedExec, `{"argv":["true"]}`)
	if resp, body := readAnswer(t, late, lateR); resp.StatusCode != 200 {
		t.Errorf("a new authorised connection at the cap = %d %s, want 200", resp.StatusCode, body)
	}
	if stillOpen[0]() {
		t.Errorf("the oldest idle connection is open, want it shed for the new one")
	}
	if _, err := client.Write([]byte(strings.ReplaceAll(authedExec, "\n", "\r\n") + "\r\n" + `{"argv":["true"]}`)); err != nil {
		t.Fatalf("the client's keep-alive connection: %v", err)
	}
	if resp, body := readAnswer(t, client, clientR); resp.StatusCode != 200 {
		t.Errorf("the client's keep-alive connection after the others came = %d %s, want 200", resp.StatusCode, body)
	}
	if got := shed(); got["unvouched"] != 2 || got["idle"]+got["incoming"] != 0 {
		t.Errorf("shed = %v, want 2 unvouched", got)
	}
}

// TestConnLimitShedsLongestIdleClient: when every connection is a client's,
// the one idle longest goes.
func TestConnLimitShedsLongestIdleClient(t *testing.T) {
	limit, shed := newConnLimit(t, 2)
	srv := serveRouter(t, newRouterWith(t, okExecutor(), RouterOptions{Security: Security{Token: testToken}}), limit)
	first, firstR := rawRequest(t, srv, authedExec, `{"argv":["true"]}`)
	readAnswer(t, first, firstR)
	waitIdle(t, limit, 1)
	second, secondR := rawRequest(t, srv, authedExec, `{"argv":["true"]}`)
	readAnswer(t, second, secondR)
	waitIdle(t, limit, 2)
	third, thirdR := rawRequest(t, srv, authedExec, `{"argv":["true"]}`)
	if resp, _ := readAnswer(t, third, thirdR); resp.StatusCode != 200 {
		t.Errorf("third connection = %d, want 200", resp.StatusCode)
	}
	if !closedWithin(first, firstR, 5*time.Second) {
		t.Errorf("the longest idle connection is open, want it shed")
	}
	if closedWithin(second, secondR, 200*time.Millisecond) {
		t.Errorf("the more recent idle connection was closed, want the longest idle one shed")
	}
	if got := shed(); got["idle"] != 1 {
		t.Errorf("shed = %v, want 1 idle", got)
	}
}

// TestConnLimitKeepsBusyConnections: connections serving a request are never
// shed; a new one beyond the cap is closed instead.
func TestConnLimitKeepsBusyConnections(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	busy := &fakeService{ExecFn: func(ctx context.Context, in service.ExecInput) (service.ExecOutput, error) {
		started <- struct{}{}
		<-release
		return okExecutor().ExecFn(ctx, in)
	}}
	limit, shed := newConnLimit(t, 2)
	srv := serveRouter(t, newRouterWith(t, busy, RouterOptions{Security: Security{Token: testToken}}), limit)
	a, aR := rawRequest(t, srv, authedExec, `{"argv":["true"]}`)
	b, bR := rawRequest(t, srv, authedExec, `{"argv":["true"]}`)
	<-started
	<-started
	extra, extraR := rawRequest(t, srv, "", "")
	if !closedWithin(extra, extraR, 5*time.Second) {
		t.Errorf("a connection beyond the cap while all are busy is open, want it closed")
	}
	close(release)
	if ra, _ := readAnswer(t, a, aR); ra.StatusCode != 200 {
		t.Errorf("a busy connection answered %d after the cap was hit, want 200", ra.StatusCode)
	}
	if rb, _ := readAnswer(t, b, bR); rb.StatusCode != 200 {
		t.Errorf("a busy connection answered %d after the cap was hit, want 200", rb.StatusCode)
	}
	if got := shed(); got["incoming"] != 1 {
		t.Errorf("shed = %v, want 1 incoming", got)
	}
}

// TestConnLimitCountsHijackedConnections: a connection a handler took over
// (as the attach route takes its WebSocket) still counts against the cap
// until that handler returns, and is not shed meanwhile: it is serving.
func TestConnLimitCountsHijackedConnections(t *testing.T) {
	limit, shed := newConnLimit(t, 2)
	hold := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hold" {
			return // 200
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c) // until the client closes
	})
	srv := serveRouter(t, releaseHijacked(hold), limit)
	held := make([]net.Conn, 2)
	for i := range held {
		held[i], _ = rawRequest(t, srv, "GET /hold HTTP/1.1\nHost: 127.0.0.1\n", "")
	}
	for deadline := time.Now().Add(5 * time.Second); countState(limit, http.StateHijacked) < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections hijacked, want 2", countState(limit, http.StateHijacked))
		}
	}
	extra, extraR := rawRequest(t, srv, "", "")
	if !closedWithin(extra, extraR, 5*time.Second) {
		t.Errorf("a connection beyond the cap of 2 while 2 hijacked ones are open is open, want it closed")
	}
	if got := shed(); got["incoming"] != 1 || got["idle"]+got["unvouched"] != 0 {
		t.Errorf("shed = %v, want 1 incoming: a hijacked connection is never shed", got)
	}
	for _, c := range held {
		c.Close()
	}
	for deadline := time.Now().Add(5 * time.Second); countState(limit, http.StateHijacked) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d hijacked connections counted after their handlers returned, want 0", countState(limit, http.StateHijacked))
		}
	}
	late, lateR := rawRequest(t, srv, "GET /ok HTTP/1.1\nHost: 127.0.0.1\n", "")
	if resp, body := readAnswer(t, late, lateR); resp.StatusCode != 200 {
		t.Errorf("a new connection once the hijacked ones closed = %d %s, want 200", resp.StatusCode, body)
	}
}

// countState is how many of limit's connections are in state s.
func countState(limit *ConnLimit, s http.ConnState) int {
	limit.mu.Lock()
	defer limit.mu.Unlock()
	n := 0
	for _, e := range limit.conns {
		if e.state == s {
			n++
		}
	}
	return n
}
