package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMetricsIgnoreHostNames sends 3,000 requests with distinct Host headers,
// refused and accepted ones (any *.localhost name, any port), and checks
// that /metrics does not grow with them, and that /exec after them is counted
// under its own route rather than otel_metric_overflow.
func TestMetricsIgnoreHostNames(t *testing.T) {
	s := startServer(t, nil)
	port := s.url[strings.LastIndex(s.url, ":"):]
	send := func(host string) {
		t.Helper()
		code, body, _ := s.do(t, "GET", "/healthz", "", map[string]string{"Host": host})
		if code != 200 && code != 421 {
			t.Fatalf("GET /healthz with Host %q = %d %s", host, code, body)
		}
	}
	hosts := func(i int) []string {
		return []string{"evil-" + strconv.Itoa(i) + ".example" + port, "n" + strconv.Itoa(i) + ".localhost" + port, "127.0.0.1:" + strconv.Itoa(1+i)}
	}
	exec := func() {
		t.Helper()
		if code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"true"}}); code != 200 {
			t.Fatalf("POST /exec = %d %v", code, got)
		}
	}
	metrics := func() string {
		t.Helper()
		code, body := s.get(t, "/metrics")
		if code != 200 {
			t.Fatalf("GET /metrics = %d", code)
		}
		return string(body)
	}
	// Every series the flood can touch, once: what follows may change counts,
	// never add series.
	for _, h := range hosts(0) {
		send(h)
	}
	exec()
	metrics() // a scrape is counted after it: the next one shows its series
	before := metrics()
	for i := 1; i <= 1000; i++ {
		for _, h := range hosts(i) {
			send(h)
		}
	}
	exec()
	after := metrics()
	t.Logf("/metrics: %d bytes before, %d bytes after 3,000 Host names", len(before), len(after))
	if series(after) != series(before) {
		t.Errorf("/metrics went from %d to %d series after 3,000 Host names, want no new series; new:\n%s", series(before), series(after), newSeries(before, after))
	}
	if len(after) > len(before)+2048 {
		t.Errorf("/metrics grew from %d to %d bytes after 3,000 Host names", len(before), len(after))
	}
	for _, leaked := range []string{"evil-1000.example", "n1000.localhost", "server_address", "server_port", "otel_metric_overflow"} {
		if strings.Contains(after, leaked) {
			t.Errorf("/metrics contains %q", leaked)
		}
	}
	if !strings.Contains(after, `http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="200",http_route="/exec"`) {
		t.Errorf("/metrics lacks /exec under its route:\n%s", grepLines(after, "http_server_request_duration_seconds_count"))
	}
	if !strings.Contains(after, `http_response_status_code="421",http_route="unrouted"`) {
		t.Errorf("/metrics lacks the refused requests under the unrouted label:\n%s", grepLines(after, "http_server_request_duration_seconds_count"))
	}
}

// series counts the samples in a Prometheus text exposition.
func series(text string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

// newSeries lists the series of after that before lacks.
func newSeries(before, after string) string {
	seen := map[string]bool{}
	for _, line := range strings.Split(before, "\n") {
		seen[strings.Fields(line + " x")[0]] = true
	}
	var out []string
	for _, line := range strings.Split(after, "\n") {
		if name := strings.Fields(line + " x")[0]; !strings.HasPrefix(line, "#") && !seen[name] {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func grepLines(text, substr string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestIdleConnectionsAreClosed: a keep-alive connection that sends no next
// request is closed after --idle-timeout.
func TestIdleConnectionsAreClosed(t *testing.T) {
	s := startServer(t, nil, "--idle-timeout", "300ms")
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Errorf("an idle keep-alive connection: read = %v, want the server to close it within 10 s", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestStreamsOutliveTheDeadlines: the body and idle deadlines bound a body's
// arrival and an idle connection, never an answer: a streamed /exec, an event
// stream and a long poll go on past both.
func TestStreamsOutliveTheDeadlines(t *testing.T) {
	s := startServer(t, nil, "--body-timeout", "300ms", "--idle-timeout", "300ms", "--retention", "1h")
	const script = "sleep 1; echo late"

	t.Run("streamed exec", func(t *testing.T) {
		req, _ := http.NewRequest("POST", s.url+"/exec", strings.NewReader(mustJSON(t, map[string]any{"argv": []string{"sh", "-c", script}})))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		events := readEvents(t, resp, nil)
		if len(events) != 2 || events[0].event != "stdout" || !strings.Contains(events[0].data, "late") || events[1].event != "exit" || !strings.Contains(events[1].data, `"status":"exited"`) {
			t.Errorf("streamed /exec past the deadlines = %v, want the output and an exit", events)
		}
	})
	t.Run("event stream", func(t *testing.T) {
		s.startProcess(t, map[string]any{"processId": "late-events", "argv": []string{"sh", "-c", script}})
		resp, err := http.Get(s.url + "/processes/late-events/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		events := readEvents(t, resp, nil)
		if len(events) != 2 || !strings.Contains(events[0].data, "late") || events[1].event != "exit" {
			t.Errorf("event stream past the deadlines = %v, want the output and an exit", events)
		}
	})
	t.Run("long poll", func(t *testing.T) {
		s.startProcess(t, map[string]any{"processId": "late-poll", "argv": []string{"sh", "-c", script}})
		code, body := s.get(t, "/processes/late-poll/output?afterSeq=0&waitMs=20000")
		if code != 200 || !strings.Contains(string(body), "late") {
			t.Errorf("long poll past the deadlines = %d %s, want the output", code, body)
		}
	})
}

// TestResumeBeyondTheOutput: a Last-Event-ID or afterSeq that names output the
// process never produced is the client's mistake (400), not output lost (410).
func TestResumeBeyondTheOutput(t *testing.T) {
	s := startServer(t, nil, "--retention", "1h")
	s.startProcess(t, map[string]any{"processId": "short", "argv": []string{"sh", "-c", "echo one; echo two"}})
	p := s.waitStatus(t, "short", "exited")
	next := int64(p["nextSeq"].(float64))
	for _, seq := range []int64{next, next + 5, math.MaxInt64} {
		req, _ := http.NewRequest("GET", s.url+"/processes/short/events", nil)
		req.Header.Set("Last-Event-ID", strconv.FormatInt(seq, 10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var prob map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&prob)
		resp.Body.Close()
		if resp.StatusCode != 400 || prob["field"] != "Last-Event-ID" {
			t.Errorf("Last-Event-ID %d with nextSeq %d = %d %v, want 400 on Last-Event-ID", seq, next, resp.StatusCode, prob)
		}
		code, body := s.get(t, "/processes/short/output?afterSeq="+strconv.FormatInt(seq, 10))
		if code != 400 || !strings.Contains(string(body), `"field":"afterSeq"`) {
			t.Errorf("afterSeq %d with nextSeq %d = %d %s, want 400 on afterSeq", seq, next, code, body)
		}
	}
	if code, body := s.get(t, "/processes/short/output?afterSeq="+strconv.FormatInt(next-1, 10)); code != 200 {
		t.Errorf("afterSeq %d (the last seq) = %d %s, want 200", next-1, code, body)
	}
}

// TestOversizedHeadersAreRefused: a connection that has not sent its token yet
// holds at most 32 KiB of headers (net/http's default is 1 MiB).
func TestOversizedHeadersAreRefused(t *testing.T) {
	s := startServer(t, nil)
	code, body, _ := s.do(t, "GET", "/healthz", "", map[string]string{"X-Padding": strings.Repeat("p", 64<<10)})
	if code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("GET /healthz with 64 KiB of headers = %d %s, want 431", code, body)
	}
	if code, _, _ := s.do(t, "GET", "/healthz", "", map[string]string{"X-Padding": strings.Repeat("p", 8<<10)}); code != 200 {
		t.Errorf("GET /healthz with 8 KiB of headers = %d, want 200", code)
	}
}
