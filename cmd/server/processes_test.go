package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event, data string
}

// readEvents reads events from an SSE body until the exit event, the end of
// the stream, or stop returns true.
func readEvents(t *testing.T, resp *http.Response, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				events = append(events, cur)
				if cur.event == "exit" || (stop != nil && stop(cur)) {
					return events
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return events
}

// execStreamThenLeave posts body to /exec as an event stream, reads up to
// the first stdout event, and disconnects: a client going away mid-stream.
func (s *testServer) execStreamThenLeave(t *testing.T, body string) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/exec", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, resp, func(e sseEvent) bool { return e.event == "stdout" })
	cancel()
	resp.Body.Close()
	if len(events) == 0 || events[0].event != "stdout" {
		t.Fatalf("events before the disconnect = %v, want the stdout event", events)
	}
	return events
}

func (s *testServer) startProcess(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	code, got, hdr := s.post(t, "/processes", body)
	if code != http.StatusCreated {
		t.Fatalf("POST /processes %v = %d %v", body, code, got)
	}
	if loc := hdr.Get("Location"); loc != "/processes/"+got["processId"].(string) {
		t.Errorf("Location = %q, want /processes/%s", loc, got["processId"])
	}
	return got
}

func (s *testServer) process(t *testing.T, id string) map[string]any {
	t.Helper()
	code, body := s.get(t, "/processes/"+id)
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || code != 200 {
		t.Fatalf("GET /processes/%s = %d %s", id, code, body)
	}
	return got
}

func (s *testServer) waitStatus(t *testing.T, id, want string) map[string]any {
	t.Helper()
	var got map[string]any
	waitFor(t, "process "+id+" to be "+want, func() bool {
		got = s.process(t, id)
		return got["status"] == want
	})
	return got
}

func TestProcessLifecycle(t *testing.T) {
	s := startServer(t, nil)
	p := s.startProcess(t, map[string]any{"processId": "cat-1", "argv": []string{"cat"}, "pipeStdin": true})
	if p["status"] != "running" || p["pipeStdin"] != true {
		t.Errorf("started process = %v, want running with pipeStdin", p)
	}
	if code, got, _ := s.post(t, "/processes", map[string]any{"processId": "cat-1", "argv": []string{"true"}}); code != 409 || got["code"] != "process_exists" {
		t.Errorf("duplicate processId = %d %v, want 409 process_exists", code, got["code"])
	}
	for i, w := range []map[string]any{
		{"data": "one\n", "writeId": "w1"},
		{"data": "one\n", "writeId": "w1"}, // a retry: acknowledged, not written again
		{"dataBase64": "dHdvCg==", "writeId": "w2", "close": true},
	} {
		code, got, _ := s.post(t, "/processes/cat-1/stdin", w)
		if code != 200 || got["duplicate"] != (i == 1) {
			t.Errorf("stdin write %d = %d %v", i, code, got)
		}
	}
	s.waitStatus(t, "cat-1", "exited")
	code, body := s.get(t, "/processes/cat-1/output?afterSeq=0")
	var out struct {
		Chunks []struct {
			Seq    int64
			Stream string
			Data   string
		}
		NextSeq int64
		Closed  bool
	}
	_ = json.Unmarshal(body, &out)
	var text strings.Builder
	for _, c := range out.Chunks {
		text.WriteString(c.Data)
	}
	if code != 200 || text.String() != "one\ntwo\n" || !out.Closed {
		t.Errorf("output = %d %q closed=%v, want one\\ntwo\\n and closed", code, text.String(), out.Closed)
	}
	if code, got, _ := s.post(t, "/processes/cat-1/stdin", map[string]any{"data": "late"}); code != 409 || got["code"] != "process_exited" {
		t.Errorf("write after the exit = %d %v, want 409 process_exited", code, got["code"])
	}

	noPipe := s.startProcess(t, map[string]any{"argv": []string{"sleep", "30"}})
	id := noPipe["processId"].(string)
	if code, got, _ := s.post(t, "/processes/"+id+"/stdin", map[string]any{"data": "x"}); code != 409 || got["code"] != "stdin_closed" {
		t.Errorf("write without pipeStdin = %d %v, want 409 stdin_closed", code, got["code"])
	}
	if code, got, _ := s.post(t, "/processes/"+id+"/signal", map[string]any{"signal": "hangup"}); code != 200 || got["delivered"] != true {
		t.Errorf("signal = %d %v, want delivered", code, got)
	}
	if got := s.waitStatus(t, id, "signaled"); got["signal"] != "SIGHUP" {
		t.Errorf("signaled process = %v, want SIGHUP", got["signal"])
	}

	long := s.startProcess(t, map[string]any{"argv": []string{"sleep", "30"}})
	id = long["processId"].(string)
	req, _ := http.NewRequest(http.MethodDelete, s.url+"/processes/"+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var term map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&term)
	resp.Body.Close()
	if resp.StatusCode != 200 || term["running"] != true {
		t.Errorf("DELETE = %d %v, want running true", resp.StatusCode, term)
	}
	s.waitStatus(t, id, "terminated")
	if code, _ := s.get(t, "/processes/none-such"); code != 404 {
		t.Errorf("GET unknown process = %d, want 404", code)
	}
	code, body = s.get(t, "/processes")
	if code != 200 || !strings.Contains(string(body), `"processId":"cat-1"`) {
		t.Errorf("GET /processes = %d, does not list cat-1", code)
	}
}

func TestLongPollReturnsOnOutput(t *testing.T) {
	s := startServer(t, nil)
	p := s.startProcess(t, map[string]any{"argv": []string{"sh", "-c", "sleep 0.3; echo late; sleep 30"}})
	id := p["processId"].(string)
	start := time.Now()
	code, body := s.get(t, "/processes/"+id+"/output?afterSeq=0&waitMs=10000")
	elapsed := time.Since(start)
	if code != 200 || !strings.Contains(string(body), "late") {
		t.Fatalf("long poll = %d %s, want the late line", code, body)
	}
	if elapsed > 5*time.Second {
		t.Errorf("long poll took %v, want it to return when the output came", elapsed)
	}
	// Nothing new: the poll waits its waitMs and returns empty.
	var out struct{ NextSeq int64 }
	_ = json.Unmarshal(body, &out)
	code, body = s.get(t, "/processes/"+id+"/output?afterSeq="+strconv.FormatInt(out.NextSeq-1, 10)+"&waitMs=200")
	if code != 200 || !strings.Contains(string(body), `"chunks":[]`) {
		t.Errorf("idle long poll = %d %s, want no chunks", code, body)
	}
	s.delete(t, "/processes/"+id)
}

func TestEventsResumeAndDisconnect(t *testing.T) {
	s := startServer(t, nil)
	p := s.startProcess(t, map[string]any{"argv": []string{"sh", "-c", "for i in 1 2 3 4 5; do echo $i; sleep 0.05; echo e$i >&2; sleep 0.05; done; echo $$; exec sleep 30"}})
	id := p["processId"].(string)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/processes/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	var seen strings.Builder
	events := readEvents(t, resp, func(e sseEvent) bool {
		var c struct{ Data string }
		_ = json.Unmarshal([]byte(e.data), &c)
		seen.WriteString(e.event + ":" + c.Data)
		return strings.Contains(seen.String(), "e5") && strings.Count(seen.String(), "\n") >= 11
	})
	cancel() // a real client disconnect
	resp.Body.Close()
	var last int64
	for _, e := range events {
		seq, _ := strconv.ParseInt(e.id, 10, 64)
		if seq <= last {
			t.Errorf("event ids not increasing: %d after %d", seq, last)
		}
		last = seq
	}
	if len(events) < 4 || !strings.Contains(seen.String(), "stderr:") || !strings.Contains(seen.String(), "stdout:") {
		t.Fatalf("got %d events (%q), want both streams", len(events), seen.String())
	}

	// Resume after the third event: exactly the events after it.
	req, _ = http.NewRequest("GET", s.url+"/processes/"+id+"/events", nil)
	req.Header.Set("Last-Event-ID", events[2].id)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	resp, err = http.DefaultClient.Do(req.WithContext(ctx2))
	if err != nil {
		t.Fatal(err)
	}
	resumed := readEvents(t, resp, func(e sseEvent) bool { return e.id == events[len(events)-1].id })
	resp.Body.Close()
	if len(resumed) == 0 || resumed[0].id != events[3].id {
		t.Errorf("resumed at %v, want the event after %s", resumed, events[2].id)
	}
	// The background process keeps running: a reader leaving is not an ending.
	if got := s.process(t, id); got["status"] != "running" {
		t.Errorf("after the reader left, status = %v, want running", got["status"])
	}
	s.delete(t, "/processes/"+id)
}

func TestEventsOutputLost(t *testing.T) {
	s := startServer(t, nil)
	// 3 MB of output: more than the 1 MiB ring.
	p := s.startProcess(t, map[string]any{"argv": []string{"sh", "-c", "yes | head -c 3000000"}})
	id := p["processId"].(string)
	s.waitStatus(t, id, "exited")
	req, _ := http.NewRequest("GET", s.url+"/processes/"+id+"/events", nil)
	req.Header.Set("Last-Event-ID", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Errorf("resume from an evicted seq = %d, want 410", resp.StatusCode)
	}
	if code, body := s.get(t, "/processes/"+id+"/output?afterSeq=1"); code != 410 || !strings.Contains(string(body), "output_lost") {
		t.Errorf("output from an evicted seq = %d %s, want 410 output_lost", code, body)
	}
}

func TestExecStreamsEvents(t *testing.T) {
	s := startServer(t, nil)
	body := `{"argv":["sh","-c","for i in 1 2 3 4 5; do echo tick $i; sleep 0.4; done; exit 4"]}`
	req, _ := http.NewRequest("POST", s.url+"/exec", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var arrivals []time.Time
	events := readEvents(t, resp, func(sseEvent) bool { arrivals = append(arrivals, time.Now()); return false })
	if len(events) < 3 {
		t.Fatalf("got %d events, want several output events and an exit", len(events))
	}
	exit := events[len(events)-1]
	if exit.event != "exit" || !strings.Contains(exit.data, `"exitCode":4`) || strings.Contains(exit.data, `"stdout"`) {
		t.Errorf("last event = %+v, want exit with exitCode 4 and no output fields", exit)
	}
	outputs := 0
	for _, e := range events {
		if e.event == "stdout" {
			outputs++
		}
	}
	if outputs < 3 {
		t.Errorf("%d stdout events over two seconds, want them as they came", outputs)
	}
	if len(arrivals) > 1 && arrivals[len(arrivals)-1].Sub(arrivals[0]) < time.Second {
		t.Errorf("events arrived within %v, want them spread over the run", arrivals[len(arrivals)-1].Sub(arrivals[0]))
	}
}

func TestExecStreamClientDisconnectTerminates(t *testing.T) {
	s := startServer(t, nil)
	events := s.execStreamThenLeave(t, `{"processId":"stream-1","argv":["sh","-c","echo $$; exec sleep 30"]}`)
	var chunk struct{ Data string }
	_ = json.Unmarshal([]byte(events[0].data), &chunk)
	pid, _ := strconv.Atoi(strings.TrimSpace(chunk.Data))
	got := s.waitStatus(t, "stream-1", "terminated")
	if alive(pid) {
		t.Errorf("process %d alive after its streaming client went away (%v)", pid, got)
	}
}

func TestShutdownEndsRunningProcesses(t *testing.T) {
	s := startServer(t, nil)
	var pids []int
	for i := range 5 {
		p := s.startProcess(t, map[string]any{"argv": []string{"sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"}})
		id := p["processId"].(string)
		var out map[string]any
		waitFor(t, "pid output", func() bool {
			_, body := s.get(t, "/processes/"+id+"/output?waitMs=100")
			_ = json.Unmarshal(body, &out)
			return len(out["chunks"].([]any)) > 0
		})
		data := out["chunks"].([]any)[0].(map[string]any)["data"].(string)
		pid, _ := strconv.Atoi(strings.TrimSpace(data))
		pids = append(pids, pid, int(p["pid"].(float64)))
		_ = i
	}
	s.stop(t)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d alive after shutdown", pid)
		}
	}
}

// TestStdinRetryAfterACutWrite is issue 14's scenario over HTTP: a client
// gives up on a write of 200,000 bytes to a child that does not read yet,
// after the pipe took what it holds; the retry under the same writeId writes
// only the rest, and the child reads exactly 200,000 bytes.
func TestStdinRetryAfterACutWrite(t *testing.T) {
	s := startServer(t, nil)
	gate := filepath.Join(t.TempDir(), "go")
	s.startProcess(t, map[string]any{
		"processId": "slow-reader", "pipeStdin": true,
		"argv": []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.02; done; wc -c`, "sh", gate},
	})
	data := strings.Repeat("0123456789", 20_000)
	body := mustJSON(t, map[string]any{"data": data, "writeId": "big"})
	impatient := &http.Client{Timeout: 2 * time.Second}
	if resp, err := impatient.Post(s.url+"/processes/slow-reader/stdin", "application/json", strings.NewReader(body)); err == nil {
		resp.Body.Close()
		t.Fatalf("a write to a child that does not read answered %d, want the client to give up", resp.StatusCode)
	}
	writeTestFile(t, gate, "")
	code, got, _ := s.post(t, "/processes/slow-reader/stdin", map[string]any{"data": data, "writeId": "big", "close": true})
	written, _ := got["written"].(float64)
	already, _ := got["alreadyWritten"].(float64)
	if code != 200 || already <= 0 || written+already != float64(len(data)) || got["duplicate"] != false {
		t.Errorf("the retry = %d %v, want 200 writing what the cut write had not (alreadyWritten > 0, written + alreadyWritten = %d)", code, got, len(data))
	}
	s.waitStatus(t, "slow-reader", "exited")
	_, out := s.get(t, "/processes/slow-reader/output?afterSeq=0")
	if !strings.Contains(string(out), `"data":"200000\n"`) {
		t.Errorf("the child counted %s, want exactly 200000 bytes", out)
	}
}
