package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// newRealService is a Service over a real process manager (with procOpts)
// and a snapshot cache that captures through it; the test's end shuts it
// down.
func newRealService(t *testing.T, procOpts exec.Options, opts Options) *Service {
	t.Helper()
	procOpts.Grace, procOpts.Drain = 300*time.Millisecond, 50*time.Millisecond
	procs := exec.NewManager(procOpts)
	cache, err := shellsnap.New(shellsnap.Options{Capture: shellsnap.NewCapturer(procs)})
	if err != nil {
		t.Fatal(err)
	}
	opts.Procs, opts.Snapshots = procs, cache
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown() = %v", err)
		}
	})
	return s
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
	}
}

// waitStatus waits until process id has status want, and returns it.
func waitStatus(t *testing.T, s *Service, id string, want exec.Status) ProcessInfo {
	t.Helper()
	var p ProcessInfo
	waitFor(t, "process "+id+" to be "+string(want), func() bool {
		var err error
		if p, err = s.Get(id); err != nil {
			t.Fatalf("Get(%s) = %v", id, err)
		}
		return p.Status == want
	})
	return p
}

func start(t *testing.T, s *Service, in StartInput) ProcessInfo {
	t.Helper()
	p, err := s.Start(context.Background(), in)
	if err != nil {
		t.Fatalf("Start(%q) = %v", in.Argv, err)
	}
	return p
}

// output is the text of a process's retained chunks.
func output(t *testing.T, s *Service, id string) (string, exec.ReadResult) {
	t.Helper()
	r, err := s.Read(context.Background(), id, ReadInput{})
	if err != nil {
		t.Fatalf("Read(%s) = %v", id, err)
	}
	var text strings.Builder
	for _, c := range r.Chunks {
		text.Write(c.Data)
	}
	return text.String(), r
}

// TestProcessLifecycleByID drives a background process through every
// operation by id: stdin writes (a retry acknowledged, not written again),
// the output, the errors of a write too late or to a closed stdin, a signal,
// a terminate, an unknown id. It is cmd/server's TestProcessLifecycle less
// the HTTP translation, which the handler tables check.
func TestProcessLifecycleByID(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	ctx := context.Background()
	p := start(t, s, StartInput{ExecInput: ExecInput{ProcessID: "cat-1", Argv: []string{"cat"}}, PipeStdin: true})
	if p.ID != "cat-1" || p.Status != exec.StatusRunning || !p.PipeStdin || p.Snapshot.Outcome != shellsnap.OutcomeNotRequested {
		t.Errorf("Start() = %+v, want cat-1 running with pipeStdin and receipt not_requested", p)
	}
	if _, err := s.Start(ctx, StartInput{ExecInput: ExecInput{ProcessID: "cat-1", Argv: []string{"true"}}}); !errors.Is(err, exec.ErrProcessExists) {
		t.Errorf("Start() with a taken id = %v, want ErrProcessExists", err)
	}
	for i, w := range []StdinInput{
		{Data: []byte("one\n"), WriteID: "w1"},
		{Data: []byte("one\n"), WriteID: "w1"}, // a retry: acknowledged, not written again
		{Data: []byte("two\n"), WriteID: "w2", Close: true},
	} {
		got, err := s.WriteStdin(ctx, "cat-1", w)
		if err != nil || got.Duplicate != (i == 1) || got.Closed != w.Close {
			t.Errorf("WriteStdin(%d) = %+v, %v; want duplicate %v, closed %v", i, got, err, i == 1, w.Close)
		}
	}
	waitStatus(t, s, "cat-1", exec.StatusExited)
	if text, r := output(t, s, "cat-1"); text != "one\ntwo\n" || !r.Closed {
		t.Errorf("output = %q closed %v, want one\\ntwo\\n and closed", text, r.Closed)
	}
	if _, err := s.WriteStdin(ctx, "cat-1", StdinInput{Data: []byte("late")}); !errors.Is(err, exec.ErrProcessExited) {
		t.Errorf("WriteStdin() after the exit = %v, want ErrProcessExited", err)
	}

	noPipe := start(t, s, StartInput{ExecInput: ExecInput{Argv: []string{"sleep", "30"}}})
	if _, err := s.WriteStdin(ctx, noPipe.ID, StdinInput{Data: []byte("x")}); !errors.Is(err, exec.ErrStdinClosed) {
		t.Errorf("WriteStdin() without pipeStdin = %v, want ErrStdinClosed", err)
	}
	if delivered, err := s.Signal(noPipe.ID, syscall.SIGHUP); !delivered || err != nil {
		t.Errorf("Signal(SIGHUP) = %v, %v; want delivered", delivered, err)
	}
	if got := waitStatus(t, s, noPipe.ID, exec.StatusSignaled); got.Signal != "SIGHUP" {
		t.Errorf("signaled process ended by %q, want SIGHUP", got.Signal)
	}

	long := start(t, s, StartInput{ExecInput: ExecInput{Argv: []string{"sleep", "30"}}})
	if running, err := s.Terminate(long.ID); !running || err != nil {
		t.Errorf("Terminate() = %v, %v; want running", running, err)
	}
	waitStatus(t, s, long.ID, exec.StatusTerminated)
	if running, err := s.Terminate(long.ID); running || err != nil {
		t.Errorf("Terminate() of an ended process = %v, %v; want not running", running, err)
	}
	if got := s.List(); !slices.ContainsFunc(got, func(p ProcessInfo) bool { return p.ID == "cat-1" }) || len(got) != 3 {
		t.Errorf("List() = %d processes, want the 3 started, cat-1 among them", len(got))
	}

	unknown := map[string]error{}
	_, unknown["Get"] = s.Get("none-such")
	_, unknown["Read"] = s.Read(ctx, "none-such", ReadInput{})
	_, unknown["Follow"] = s.Follow("none-such", 0)
	_, unknown["WriteStdin"] = s.WriteStdin(ctx, "none-such", StdinInput{})
	_, unknown["Signal"] = s.Signal("none-such", syscall.SIGHUP)
	_, unknown["Terminate"] = s.Terminate("none-such")
	for op, err := range unknown {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s(none-such) = %v, want ErrNotFound", op, err)
		}
	}
}

// TestReadWaitsForOutput: a read with nothing to return waits for output
// and returns as soon as some comes; one that finds nothing new returns
// empty after its wait (cmd/server's TestLongPollReturnsOnOutput, without
// its wall-clock bound: here the output comes only once the read waits).
func TestReadWaitsForOutput(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	p := start(t, s, StartInput{ExecInput: ExecInput{Argv: []string{"sh", "-c", "read go; echo late; sleep 30"}}, PipeStdin: true})
	type read struct {
		r   exec.ReadResult
		err error
	}
	reads := make(chan read, 1)
	go func() {
		r, err := s.Read(context.Background(), p.ID, ReadInput{Wait: time.Hour})
		reads <- read{r, err}
	}()
	if _, err := s.WriteStdin(context.Background(), p.ID, StdinInput{Data: []byte("go\n")}); err != nil {
		t.Fatal(err)
	}
	var got read
	select {
	case got = <-reads:
	case <-time.After(20 * time.Second):
		t.Fatalf("a read waiting an hour for output did not return once the output came")
	}
	if got.err != nil || len(got.r.Chunks) != 1 || string(got.r.Chunks[0].Data) != "late\n" {
		t.Fatalf("Read() = %+v, %v; want the late line", got.r, got.err)
	}
	r, err := s.Read(context.Background(), p.ID, ReadInput{AfterSeq: got.r.NextSeq - 1, Wait: 200 * time.Millisecond})
	if err != nil || len(r.Chunks) != 0 || r.Closed {
		t.Errorf("Read() with nothing new = %+v, %v; want no chunks, not closed", r, err)
	}
	if _, err := s.Read(context.Background(), p.ID, ReadInput{AfterSeq: r.NextSeq}); !errors.Is(err, exec.ErrSeqAhead) {
		t.Errorf("Read() after the next seq = %v, want ErrSeqAhead", err)
	}
}

// TestStdinRetryAfterACutWrite is issue 14's scenario (cmd/server's test of
// the same name, without HTTP): a client gives up on a write of 200,000
// bytes to a child that does not read yet, after the pipe took what it
// holds; the retry under the same writeId writes only the rest, and the
// child reads exactly 200,000 bytes.
func TestStdinRetryAfterACutWrite(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	gate := filepath.Join(t.TempDir(), "go")
	start(t, s, StartInput{ExecInput: ExecInput{ProcessID: "slow-reader",
		Argv: []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.02; done; wc -c`, "sh", gate}}, PipeStdin: true})
	data := []byte(strings.Repeat("0123456789", 20_000))
	impatient, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if w, err := s.WriteStdin(impatient, "slow-reader", StdinInput{Data: data, WriteID: "big"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write to a child that does not read = %+v, %v; want the client's deadline", w, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.WriteStdin(context.Background(), "slow-reader", StdinInput{Data: data, WriteID: "big", Close: true})
	if err != nil || got.AlreadyWritten <= 0 || got.Written+got.AlreadyWritten != len(data) || got.Duplicate {
		t.Errorf("the retry = %+v, %v; want it to write what the cut write had not (alreadyWritten > 0, written + alreadyWritten = %d)", got, err, len(data))
	}
	waitStatus(t, s, "slow-reader", exec.StatusExited)
	if text, _ := output(t, s, "slow-reader"); text != "200000\n" {
		t.Errorf("the child counted %q, want exactly 200000 bytes", text)
	}
}

// TestRecordFollowsTheTable: the service keeps a record for each process in
// exec's table and no other (the records never outgrow the table), and it
// shows every listed process with its record: the client's argv and the
// receipt.
func TestRecordFollowsTheTable(t *testing.T) {
	s := newRealService(t, exec.Options{MaxRetained: 2}, Options{})
	for i := range 10 {
		out, err := s.Exec(context.Background(), ExecInput{Argv: []string{"echo", "run", string(rune('a' + i))}})
		if err != nil || out.Result.Status != exec.StatusExited {
			t.Fatalf("Exec(%d) = %+v, %v", i, out, err)
		}
	}
	s.mu.Lock()
	records := len(s.records)
	s.mu.Unlock()
	listed := s.procs.List()
	if records != len(listed) || records != 2 {
		t.Errorf("%d records for %d processes in the table, want 2 and 2", records, len(listed))
	}
	for _, p := range s.List() {
		if len(p.Argv) != 3 || p.Argv[1] != "run" || p.Snapshot.Outcome != shellsnap.OutcomeNotRequested {
			t.Errorf("List() shows %+v, want the client's argv and the receipt", p)
		}
	}
}

// TestResultWaitsForTheEnding: a follower's Result gives the ending once the
// process has ended, waits for it until its context ends, and never ends it
// itself.
func TestResultWaitsForTheEnding(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	p := start(t, s, StartInput{ExecInput: ExecInput{Argv: []string{"sh", "-c", "read x; echo out; exit 3"}}, PipeStdin: true})
	f, err := s.Follow(p.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := f.Result(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Result() of a running process whose caller gives up = %v, want the caller's deadline", err)
	}
	if got, _ := s.Get(p.ID); got.Status != exec.StatusRunning {
		t.Errorf("after a Result() that gave up, the process is %s, want running", got.Status)
	}
	if _, err := s.WriteStdin(context.Background(), p.ID, StdinInput{Data: []byte("\n")}); err != nil {
		t.Fatal(err)
	}
	out, err := f.Result(context.Background())
	if err != nil || out.ProcessID != p.ID || out.Pid != p.Pid || out.Result.ExitCode == nil || *out.Result.ExitCode != 3 ||
		string(out.Result.Stdout.Data) != "out\n" || out.Snapshot.Outcome != shellsnap.OutcomeNotRequested {
		t.Errorf("Result() = %+v, %v; want exit 3 with its output and receipt", out, err)
	}
}
