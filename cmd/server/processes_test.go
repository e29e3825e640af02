package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/client"
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

func TestShutdownEndsRunningProcesses(t *testing.T) {
	s := startServer(t, nil)
	api := s.api(t)
	ctx := context.Background()
	var pids []int
	for range 5 {
		p, err := api.Start(ctx, client.StartProcessRequest{Argv: []string{"sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"}})
		if err != nil {
			t.Fatalf("Start = %+v %v", p, err)
		}
		// A long poll: it answers at the first output.
		waitMs := 5000
		out, err := client.Result(api.ReadProcessOutputWithResponse(ctx, p.ProcessId, &client.ReadProcessOutputParams{WaitMs: &waitMs}))
		if err != nil || len(out.Chunks) == 0 {
			t.Fatalf("output of %s = %+v %v, want the sleep's pid", p.ProcessId, out, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out.Chunks[0].Bytes())))
		pids = append(pids, pid, p.Pid)
	}
	s.stop(t)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d alive after shutdown", pid)
		}
	}
}

// TestReadFromTheStartAfterEviction: once a process's first chunks have left
// the output ring, afterSeq=0 (and the event stream without Last-Event-ID)
// still read from the start, which is now the oldest retained chunk; the
// stream says what it lost first. Only an afterSeq that names evicted output
// is 410.
func TestReadFromTheStartAfterEviction(t *testing.T) {
	s := startServer(t, nil)
	api := s.api(t)
	ctx := context.Background()
	// 3 MiB through a 1 MiB ring.
	p, err := api.Start(ctx, client.StartProcessRequest{Argv: []string{"sh", "-c", "head -c 3145728 /dev/zero | tr '\\0' x"}})
	if err != nil {
		t.Fatal(err)
	}
	s.waitStatus(t, p.ProcessId, "exited")

	zero, one := int64(0), int64(1)
	page, err := client.Result(api.ReadProcessOutputWithResponse(ctx, p.ProcessId, &client.ReadProcessOutputParams{AfterSeq: &zero}))
	if err != nil || len(page.Chunks) == 0 || page.Chunks[0].Seq <= 1 {
		t.Fatalf("output?afterSeq=0 after eviction = %+v, %v; want the retained chunks, from a seq above 1", page, err)
	}
	_, err = client.Result(api.ReadProcessOutputWithResponse(ctx, p.ProcessId, &client.ReadProcessOutputParams{AfterSeq: &one}))
	if e, ok := errors.AsType[*client.Error](err); !ok || e.Status != http.StatusGone || e.Code != client.ProblemCodeOutputLost {
		t.Errorf("output?afterSeq=1 after eviction = %v, want 410 output_lost", err)
	}

	stream, err := api.Events(ctx, p.ProcessId, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var first, bytes int64
	for {
		c, err := stream.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("events without Last-Event-ID after eviction: %v", err)
		}
		if first == 0 {
			first = c.Seq
		}
		bytes += int64(len(c.Bytes()))
	}
	if first != page.Chunks[0].Seq || stream.Lost() != first-1 || bytes == 0 || bytes >= 3<<20 {
		t.Errorf("events from the start = first seq %d, lost %d, %d bytes; want the oldest retained %d, %d lost, the ring's bytes",
			first, stream.Lost(), bytes, page.Chunks[0].Seq, page.Chunks[0].Seq-1)
	}
}
