package handlers

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// TestAcceptNegotiation: /exec streams only when the client prefers
// text/event-stream to JSON by its Accept header's media ranges and q-values,
// not whenever the header mentions it.
func TestAcceptNegotiation(t *testing.T) {
	tests := []struct {
		name   string
		accept []string
		want   bool
	}{
		{"no Accept", nil, false},
		{"event stream", []string{"text/event-stream"}, true},
		{"event stream with a parameter", []string{"text/event-stream; charset=utf-8"}, true},
		{"JSON", []string{"application/json"}, false},
		{"event stream in another charset", []string{"text/event-stream; charset=latin1"}, false},
		{"anything", []string{"*/*"}, false},
		{"refused by q=0", []string{"text/event-stream;q=0, application/json"}, false},
		{"refused by q=0 alone", []string{"text/event-stream;q=0"}, false},
		{"JSON preferred by q", []string{"text/event-stream;q=0.5, application/json"}, false},
		{"stream preferred by q", []string{"application/json;q=0.5, text/event-stream"}, true},
		{"any text", []string{"text/*"}, true},
		{"specific range wins over its wildcard", []string{"text/*;q=1, text/event-stream;q=0, */*;q=0.1"}, false},
		{"JSON ruled out by a range", []string{"application/*;q=0, text/event-stream"}, true},
		{"over two header lines", []string{"application/json;q=0.1", "text/event-stream"}, true},
		{"dashboard", []string{"application/json, application/problem+json"}, false},
		{"malformed", []string{"text/event-stream;;q=x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bool
			h := withEventStream(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = wantsEventStream(r.Context()) }))
			req := httptest.NewRequest("POST", "/exec", nil)
			for _, a := range tt.accept {
				req.Header.Add("Accept", a)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got != tt.want {
				t.Errorf("Accept %q streams = %v, want %v", tt.accept, got, tt.want)
			}
		})
	}
}

// readStep is one answer of a scripted Read.
type readStep struct {
	r   exec.ReadResult
	err error
	// leave, when set, makes the client go away during this read: the read
	// answers as a read whose context ended.
	leave bool
}

// reader is a scripted Read, or a follower's Next: it answers its steps in
// order and then the last one again, and records what each read asked for.
// followErr is what Follow answers, nil for a follower that reads it.
type reader struct {
	steps     []readStep
	cancel    context.CancelFunc // the request's, for a step that leaves
	followErr error

	mu    sync.Mutex
	asked []service.ReadInput
}

// follower is a Follow of the process id p-N whose Next reads rd; any other
// id is not found.
func (rd *reader) follower(svc *fakeService, id string, info service.ProcessInfo, result func(context.Context) (service.ExecOutput, error)) func(string, int64) (service.Follower, error) {
	return func(got string, _ int64) (service.Follower, error) {
		if got != id {
			return nil, service.ErrNotFound
		}
		if rd.followErr != nil {
			return nil, rd.followErr
		}
		next := func(ctx context.Context, wait time.Duration) (exec.ReadResult, error) {
			return rd.read(ctx, id, service.ReadInput{Wait: wait})
		}
		return &fakeFollower{svc: svc, next: next, info: info, result: result}, nil
	}
}

func (rd *reader) read(ctx context.Context, _ string, in service.ReadInput) (exec.ReadResult, error) {
	rd.mu.Lock()
	rd.asked = append(rd.asked, in)
	step := rd.steps[min(len(rd.asked), len(rd.steps))-1]
	rd.mu.Unlock()
	if step.leave {
		rd.cancel()
		<-ctx.Done()
		return step.r, ctx.Err()
	}
	return step.r, step.err
}

func (rd *reader) inputs() []service.ReadInput {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return append([]service.ReadInput(nil), rd.asked...)
}

func chunk(seq int64, stream exec.Stream, data string) exec.Chunk {
	return exec.Chunk{Seq: seq, Stream: stream, Data: []byte(data)}
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, event, data string }

// parseEvents splits an event stream into its events; comments are kept as
// events named ":".
func parseEvents(body string) []sseEvent {
	var events []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			case strings.HasPrefix(line, ":"):
				e.event = ":"
			}
		}
		if e.event != "" {
			events = append(events, e)
		}
	}
	return events
}

// streamCase is one request to an event stream over a scripted reader.
type streamCase struct {
	name   string
	method string
	target string
	body   string
	header map[string]string
	steps  []readStep
	// followErr is what Follow answers; nil: a follower of steps.
	followErr error
	status    int
	// events are the events' names in order, with their ids where given
	// (name#id); want is a problem's fields when status is not 200.
	events []string
	want   string
	calls  []string
	asked  []service.ReadInput
	check  func(t *testing.T, events []sseEvent)
}

func runStreamCases(t *testing.T, newService func(rd *reader) *fakeService, tests []streamCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rd := &reader{steps: tt.steps, cancel: cancel, followErr: tt.followErr}
			f := newService(rd)
			req := localRequest(tt.method, tt.target, strings.NewReader(tt.body)).WithContext(ctx)
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			newTestRouter(t, f, io.Discard).ServeHTTP(rec, req)
			what := tt.method + " " + tt.target
			if rec.Code != tt.status {
				t.Fatalf("%s = %d %s, want %d", what, rec.Code, rec.Body, tt.status)
			}
			if tt.status != http.StatusOK {
				if err := jsonHas(rec.Body.Bytes(), tt.want); err != nil {
					t.Errorf("%s = %s: %v", what, rec.Body, err)
				}
			} else {
				if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("%s Content-Type = %q, want text/event-stream", what, ct)
				}
				events := parseEvents(rec.Body.String())
				var names []string
				for _, e := range events {
					if e.id != "" {
						names = append(names, e.event+"#"+e.id)
					} else {
						names = append(names, e.event)
					}
				}
				if !slices.Equal(names, tt.events) {
					t.Errorf("%s events = %q, want %q\n%s", what, names, tt.events, rec.Body)
				}
				if tt.check != nil {
					tt.check(t, events)
				}
			}
			if got := f.called(); !slices.Equal(got, tt.calls) {
				t.Errorf("%s called %q, want %q", what, got, tt.calls)
			}
			if tt.asked != nil && !slices.Equal(rd.inputs(), tt.asked) {
				t.Errorf("%s read %+v, want %+v", what, rd.inputs(), tt.asked)
			}
		})
	}
}

// TestProcessEvents: GET /processes/{id}/events over a scripted process:
// its chunks as events with their seq as id, a resume after Last-Event-ID,
// the refusals before the stream starts, a lost event when the reader fell
// behind, keepalives, and the exit event; a reader that leaves ends nothing
// (cmd/server's TestEventsResumeAndDisconnect and TestEventsOutputLost, the
// HTTP half).
func TestProcessEvents(t *testing.T) {
	newService := func(rd *reader) *fakeService {
		f := &fakeService{}
		f.FollowFn = rd.follower(f, "p-1", ended("p-1"), nil)
		return f
	}
	closed := readStep{r: exec.ReadResult{NextSeq: 9, Exited: true, Closed: true}}
	runStreamCases(t, newService, []streamCase{
		{name: "events then exit", method: "GET", target: "/processes/p-1/events",
			steps:  []readStep{{r: exec.ReadResult{Chunks: []exec.Chunk{chunk(1, exec.Stdout, "1\n"), chunk(2, exec.Stderr, "e1\n")}, NextSeq: 3}}, closed},
			status: 200, events: []string{"stdout#1", "stderr#2", "exit"},
			calls: []string{"Follow p-1 0", "Next", "Next", "Info"},
			asked: []service.ReadInput{{Wait: heartbeat}, {Wait: heartbeat}},
			check: func(t *testing.T, events []sseEvent) {
				if err := jsonHas([]byte(events[0].data), `{"seq":1,"stream":"stdout","data":"1\n"}`); err != nil {
					t.Errorf("stdout event %s: %v", events[0].data, err)
				}
				if err := jsonHas([]byte(events[2].data), `{"processId":"p-1","status":"exited","exitCode":2}`); err != nil {
					t.Errorf("exit event %s: %v", events[2].data, err)
				}
			}},
		{name: "resume after Last-Event-ID", method: "GET", target: "/processes/p-1/events", header: map[string]string{"Last-Event-ID": "3"},
			steps:  []readStep{{r: exec.ReadResult{Chunks: []exec.Chunk{chunk(4, exec.Stdout, "4\n")}, NextSeq: 5}}, closed},
			status: 200, events: []string{"stdout#4", "exit"}, calls: []string{"Follow p-1 3", "Next", "Next", "Info"}},
		{name: "malformed Last-Event-ID", method: "GET", target: "/processes/p-1/events", header: map[string]string{"Last-Event-ID": "x"},
			status: 400, want: `{"code":"invalid_request","field":"Last-Event-ID"}`, calls: []string{"Follow p-1 0"}},
		{name: "negative Last-Event-ID", method: "GET", target: "/processes/p-1/events", header: map[string]string{"Last-Event-ID": "-1"},
			status: 400, want: `{"code":"invalid_request","field":"Last-Event-ID"}`, calls: []string{"Follow p-1 0"}},
		{name: "unknown process before a malformed Last-Event-ID", method: "GET", target: "/processes/none/events",
			header: map[string]string{"Last-Event-ID": "x"}, status: 404, want: `{"code":"not_found"}`, calls: []string{"Follow none 0"}},
		{name: "unknown process", method: "GET", target: "/processes/none/events", status: 404,
			want: `{"code":"not_found"}`, calls: []string{"Follow none 0"}},
		{name: "resume beyond the output", method: "GET", target: "/processes/p-1/events", header: map[string]string{"Last-Event-ID": "99"},
			followErr: exec.ErrSeqAhead, status: 400, want: `{"code":"invalid_request","field":"Last-Event-ID"}`, calls: []string{"Follow p-1 99"}},
		{name: "resume from evicted output", method: "GET", target: "/processes/p-1/events", header: map[string]string{"Last-Event-ID": "1"},
			followErr: exec.ErrOutputLost, status: 410, want: `{"code":"output_lost","field":"Last-Event-ID"}`, calls: []string{"Follow p-1 1"}},
		{name: "reader fell behind", method: "GET", target: "/processes/p-1/events",
			steps:  []readStep{{r: exec.ReadResult{NextSeq: 7}, err: exec.ErrOutputLost}, {r: exec.ReadResult{Chunks: []exec.Chunk{chunk(7, exec.Stdout, "7\n")}, NextSeq: 8}}, closed},
			status: 200, events: []string{"lost", "stdout#7", "exit"}, calls: []string{"Follow p-1 0", "Next", "Next", "Next", "Info"},
			check: func(t *testing.T, events []sseEvent) {
				if events[0].data != `{"nextSeq":7}` {
					t.Errorf("lost event data %s, want the seq it goes on from", events[0].data)
				}
			}},
		{name: "first chunks evicted before the stream", method: "GET", target: "/processes/p-1/events",
			steps:  []readStep{{r: exec.ReadResult{Chunks: []exec.Chunk{chunk(5, exec.Stdout, "5\n")}, NextSeq: 6}}, closed},
			status: 200, events: []string{"lost", "stdout#5", "exit"}, calls: []string{"Follow p-1 0", "Next", "Next", "Info"}},
		{name: "keepalive while quiet", method: "GET", target: "/processes/p-1/events",
			steps:  []readStep{{r: exec.ReadResult{NextSeq: 1}}, closed},
			status: 200, events: []string{":", "exit"}, calls: []string{"Follow p-1 0", "Next", "Next", "Info"}},
		{name: "reader leaves", method: "GET", target: "/processes/p-1/events",
			steps:  []readStep{{r: exec.ReadResult{Chunks: []exec.Chunk{chunk(1, exec.Stdout, "1\n")}, NextSeq: 2}}, {leave: true}},
			status: 200, events: []string{"stdout#1"}, calls: []string{"Follow p-1 0", "Next", "Next"}},
	})
}

// TestExecEvents: a streamed /exec over a scripted process: its chunks,
// then one exit event with the ending less the output (which the events
// carried); a client that leaves takes the process group with it, the
// process it started, not whatever its id names then; a command refused is
// a problem, not a stream (cmd/server's TestExecStreamsEvents and
// TestExecStreamClientDisconnectTerminates, the HTTP half).
func TestExecEvents(t *testing.T) {
	four := 4
	newService := func(rd *reader) *fakeService {
		f := &fakeService{}
		// The process started is followed by what StartExec gives, never
		// looked up by its id (FollowFn is nil).
		follower := rd.follower(f, "p-7", proc("p-7"), func(context.Context) (service.ExecOutput, error) {
			return service.ExecOutput{ProcessID: "p-7", Pid: 4242, Result: exec.Result{
				Status: exec.StatusExited, ExitCode: &four, Stdout: exec.Output{Data: []byte("tick 1\n"), Total: 7},
			}, Snapshot: shellsnap.Receipt{Outcome: shellsnap.OutcomeNotRequested}}, nil
		})
		f.StartExecFn = func(_ context.Context, in service.ExecInput) (service.Follower, error) {
			if in.Argv[0] == "nope" {
				return nil, fmt.Errorf("%w: nope", exec.ErrSpawn)
			}
			return follower("p-7", 0)
		}
		return f
	}
	stream := map[string]string{"Accept": "text/event-stream"}
	ticks := readStep{r: exec.ReadResult{Chunks: []exec.Chunk{chunk(1, exec.Stdout, "tick 1\n")}, NextSeq: 2}}
	runStreamCases(t, newService, []streamCase{
		{name: "events then exit", method: "POST", target: "/exec", body: `{"argv":["sh","-c","echo tick 1; exit 4"]}`, header: stream,
			steps:  []readStep{ticks, {r: exec.ReadResult{NextSeq: 2, Exited: true, ExitCode: &four, Closed: true}}},
			status: 200, events: []string{"stdout#1", "exit"}, calls: []string{"StartExec", "Next", "Next", "Result"},
			asked: []service.ReadInput{{Wait: heartbeat}, {Wait: heartbeat}},
			check: func(t *testing.T, events []sseEvent) {
				exit := events[len(events)-1].data
				if err := jsonHas([]byte(exit), `{"processId":"p-7","pid":4242,"status":"exited","exitCode":4,"stdoutBytes":7}`); err != nil {
					t.Errorf("exit event %s: %v", exit, err)
				}
				if strings.Contains(exit, `"stdout"`) {
					t.Errorf("exit event %s carries the output, which the events did", exit)
				}
			}},
		{name: "client leaves", method: "POST", target: "/exec", body: `{"argv":["sleep","30"]}`, header: stream,
			steps:  []readStep{ticks, {leave: true}},
			status: 200, events: []string{"stdout#1"}, calls: []string{"StartExec", "Next", "Next", "Terminate"}},
		{name: "refused", method: "POST", target: "/exec", body: `{"argv":["nope"]}`, header: stream,
			status: 422, want: `{"code":"spawn_failed","field":"argv"}`, calls: []string{"StartExec"}},
	})
}

// TestExecEventsAreFlushed: each event reaches the client when it is
// written, not at the end: the second chunk is produced only once the client
// has seen the first (what cmd/server's TestExecStreamsEvents showed with a
// wall clock).
func TestExecEventsAreFlushed(t *testing.T) {
	seen := make(chan struct{})
	zero := 0
	var reads atomic.Int32
	f := &fakeService{}
	next := func(ctx context.Context, _ time.Duration) (exec.ReadResult, error) {
		switch reads.Add(1) {
		case 1:
			return exec.ReadResult{Chunks: []exec.Chunk{chunk(1, exec.Stdout, "first\n")}, NextSeq: 2}, nil
		case 2:
			select {
			case <-seen:
			case <-ctx.Done():
				return exec.ReadResult{}, ctx.Err()
			}
			return exec.ReadResult{Chunks: []exec.Chunk{chunk(2, exec.Stdout, "second\n")}, NextSeq: 3}, nil
		}
		return exec.ReadResult{NextSeq: 3, Closed: true}, nil
	}
	result := func(context.Context) (service.ExecOutput, error) {
		return service.ExecOutput{ProcessID: "p-1", Result: exec.Result{Status: exec.StatusExited, ExitCode: &zero}}, nil
	}
	f.StartExecFn = func(context.Context, service.ExecInput) (service.Follower, error) {
		return &fakeFollower{svc: f, next: next, result: result}, nil
	}
	srv := serveRouter(t, newTestRouter(t, f, io.Discard), nil)
	// The whole exchange is bounded: an event left in a buffer (or headers
	// never flushed) would otherwise wait forever for the next read.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/exec", strings.NewReader(`{"argv":["true"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the stream's headers never came: %v", err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var got []string
	for line := range lines {
		if strings.HasPrefix(line, "event: ") {
			if got = append(got, line[7:]); len(got) == 1 {
				close(seen) // the first event came while the process "runs"
			}
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("events %q: the first was not flushed to the client before the next was produced", got)
	}
	if want := []string{"stdout", "stdout", "exit"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}
