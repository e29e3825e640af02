package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startProcess starts spec on m and ends its group when the test ends.
func startProcess(t *testing.T, m *Manager, spec Spec) *Process {
	t.Helper()
	p, err := m.Start(spec)
	if err != nil {
		t.Fatalf("Start(%q) error %v", spec.Argv, err)
	}
	t.Cleanup(func() {
		p.Terminate(StatusTerminated)
		<-p.Done()
	})
	return p
}

// readAll reads p's output from afterSeq until it is closed.
func readAll(t *testing.T, p *Process, afterSeq int64) []Chunk {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var all []Chunk
	for {
		r, err := p.Read(ctx, afterSeq, 0, 5*time.Second)
		if err != nil {
			t.Fatalf("Read(%d) error %v", afterSeq, err)
		}
		all = append(all, r.Chunks...)
		afterSeq = r.NextSeq - 1
		if r.Closed {
			return all
		}
	}
}

// readUntil reads p's output until it contains every one of wants.
func readUntil(t *testing.T, p *Process, wants ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out strings.Builder
	after := int64(0)
	for {
		r, err := p.Read(ctx, after, 0, time.Second)
		if err != nil {
			t.Fatalf("Read(%d) waiting for %q in %q: %v", after, wants, out.String(), err)
		}
		for _, c := range r.Chunks {
			out.Write(c.Data)
		}
		after = r.NextSeq - 1
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(out.String(), w) }) {
			return out.String()
		}
		if r.Closed {
			t.Fatalf("output closed without %q: %q", wants, out.String())
		}
	}
}

func streamText(chunks []Chunk, s Stream) string {
	var b strings.Builder
	for _, c := range chunks {
		if c.Stream == s {
			b.Write(c.Data)
		}
	}
	return b.String()
}

func TestInterleavedOutputSharesOneSeq(t *testing.T) {
	const lines = 300
	m := testManager()
	p := startProcess(t, m, helperSpec(t, "interleave", fmt.Sprint(lines)))
	chunks := readAll(t, p, 0)

	var wantOut, wantErr strings.Builder
	for i := range lines {
		fmt.Fprintf(&wantOut, "o%d\n", i)
		fmt.Fprintf(&wantErr, "e%d\n", i)
	}
	for i, c := range chunks {
		if c.Seq != int64(i+1) {
			t.Fatalf("chunk %d has seq %d, want %d: seqs must count up from 1 across both streams", i, c.Seq, i+1)
		}
	}
	if got := streamText(chunks, Stdout); got != wantOut.String() {
		t.Errorf("stdout from chunks = %d bytes, want %d bytes %q...", len(got), wantOut.Len(), wantOut.String()[:20])
	}
	if got := streamText(chunks, Stderr); got != wantErr.String() {
		t.Errorf("stderr from chunks = %d bytes, want %d bytes %q...", len(got), wantErr.Len(), wantErr.String()[:20])
	}
	in := p.Info()
	if in.NextSeq != int64(len(chunks)+1) || in.StdoutBytes != int64(wantOut.Len()) || in.StderrBytes != int64(wantErr.Len()) {
		t.Errorf("Info() = next seq %d, %d/%d bytes, want %d, %d/%d", in.NextSeq, in.StdoutBytes, in.StderrBytes, len(chunks)+1, wantOut.Len(), wantErr.Len())
	}
	res := p.Result()
	if string(res.Stdout.Data) != wantOut.String() || string(res.Stderr.Data) != wantErr.String() {
		t.Errorf("Result() output = %d/%d bytes, want %d/%d", len(res.Stdout.Data), len(res.Stderr.Data), wantOut.Len(), wantErr.Len())
	}
}

// TestReadResumeAndMaxBytes reads a finished process's output again from
// several seqs and budgets; every answer must be the slice of the full output
// the rules give.
func TestReadResumeAndMaxBytes(t *testing.T) {
	m := testManager()
	p := startProcess(t, m, helperSpec(t, "interleave", "50"))
	all := readAll(t, p, 0)
	if len(all) < 2 {
		// Reads may coalesce writes, but each stream has a chunk of its own.
		t.Fatalf("only %d chunks from writes to both streams", len(all))
	}
	// want applies the rules to the full output.
	want := func(after int64, maxBytes int) []int64 {
		var out []int64
		total := 0
		for _, c := range all[after:] {
			if maxBytes > 0 && len(out) > 0 && total+len(c.Data) > maxBytes {
				break
			}
			out = append(out, c.Seq)
			total += len(c.Data)
		}
		return out
	}
	last := int64(len(all))
	tests := []struct {
		name     string
		after    int64
		maxBytes int
	}{
		{"from the start", 0, 0},
		{"resume in the middle", last / 2, 0},
		{"resume at the last", last - 1, 0},
		{"one byte budget", 0, 1},
		{"budget of the first two", 0, len(all[0].Data) + len(all[1].Data)},
		{"budget in the middle", last / 2, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := p.Read(context.Background(), tt.after, tt.maxBytes, 0)
			if err != nil {
				t.Fatalf("Read(%d, %d) error %v", tt.after, tt.maxBytes, err)
			}
			w := want(tt.after, tt.maxBytes)
			wantNext := w[len(w)-1] + 1
			if !slices.Equal(seqs(r.Chunks), w) || r.NextSeq != wantNext {
				t.Errorf("Read(%d, %d) = seqs %v next %d, want %v next %d", tt.after, tt.maxBytes, seqs(r.Chunks), r.NextSeq, w, wantNext)
			}
			if wantClosed := wantNext == last+1; r.Closed != wantClosed || !r.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
				t.Errorf("Read(%d, %d) = closed %v exited %v code %s, want closed %v exited true code 0", tt.after, tt.maxBytes, r.Closed, r.Exited, fmtCode(r.ExitCode), wantClosed)
			}
		})
	}
}

func TestReadOutputLost(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, OutputRingBytes: 64})
	var want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "line %03d\n", i)
	}
	p, err := m.Run(context.Background(), Spec{Argv: []string{"sh", "-c", `i=0; while [ $i -lt 100 ]; do printf 'line %03d\n' $i; i=$((i+1)); done`}})
	if err != nil {
		t.Fatal(err)
	}
	// 0 is "from the start": whatever is retained, no loss.
	r, err := p.Read(context.Background(), 0, 0, 0)
	if err != nil || len(r.Chunks) == 0 {
		t.Fatalf("Read(0) after eviction = %d chunks, %v; want the retained chunks", len(r.Chunks), err)
	}
	oldest := r.Chunks[0].Seq
	if oldest <= 1 {
		t.Fatalf("Read(0) after eviction starts at seq %d, want the oldest retained seq > 1", oldest)
	}
	r, err = p.Read(context.Background(), 1, 0, 0)
	if !errors.Is(err, ErrOutputLost) || r.NextSeq != oldest {
		t.Errorf("Read(1) after eviction = NextSeq %d, %v; want %d, ErrOutputLost", r.NextSeq, err, oldest)
	}
	if _, err := p.Read(context.Background(), oldest-2, 0, 0); oldest > 2 && !errors.Is(err, ErrOutputLost) {
		t.Errorf("Read(%d) just before the oldest error = %v, want ErrOutputLost", oldest-2, err)
	}
	r, err = p.Read(context.Background(), oldest-1, 0, 0)
	if err != nil || len(r.Chunks) == 0 || r.Chunks[0].Seq != oldest || !r.Closed {
		t.Errorf("Read(%d) = %v chunks from %v closed %v, %v; want chunks from %d, closed", oldest-1, len(r.Chunks), seqs(r.Chunks[:min(1, len(r.Chunks))]), r.Closed, err, oldest)
	}
	if got := streamText(r.Chunks, Stdout); !strings.HasSuffix(want.String(), got) || len(got) > 64 {
		t.Errorf("retained output %q, want a tail of at most 64 bytes of the output", got)
	}
	if _, err := p.Read(context.Background(), r.NextSeq-1, 0, 0); err != nil {
		t.Errorf("Read(%d) at the end error = %v, want none", r.NextSeq-1, err)
	}
	// The result does not depend on the ring.
	if got := p.Result().Stdout; string(got.Data) != want.String() || got.Truncated {
		t.Errorf("Result().Stdout = %d bytes truncated %v, want all %d bytes", len(got.Data), got.Truncated, want.Len())
	}
}

func TestLongPoll(t *testing.T) {
	m := testManager()
	t.Run("returns early on output", func(t *testing.T) {
		p := startProcess(t, m, helperSpec(t, "print-after", "200ms"))
		start := time.Now()
		r, err := p.Read(context.Background(), 0, 0, time.Minute)
		if err != nil || streamText(r.Chunks, Stdout) != "late\n" {
			t.Fatalf("Read(0, wait 1m) = %q, %v, want \"late\\n\"", streamText(r.Chunks, Stdout), err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("Read(0, wait 1m) took %v, want it to return on output", d)
		}
		if r.Exited || r.Closed {
			t.Errorf("Read(0) on a running process = exited %v closed %v, want false false", r.Exited, r.Closed)
		}
	})
	t.Run("times out without output", func(t *testing.T) {
		p := startProcess(t, m, helperSpec(t, "sleep"))
		const wait = 200 * time.Millisecond
		start := time.Now()
		r, err := p.Read(context.Background(), 0, 0, wait)
		if err != nil || len(r.Chunks) != 0 || r.NextSeq != 1 {
			t.Fatalf("Read(0, wait %v) = %d chunks next %d, %v; want none, next 1", wait, len(r.Chunks), r.NextSeq, err)
		}
		if d := time.Since(start); d < wait {
			t.Errorf("Read(0, wait %v) returned after %v, want it to wait", wait, d)
		}
	})
	t.Run("ends with the context", func(t *testing.T) {
		p := startProcess(t, m, helperSpec(t, "sleep"))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := p.Read(ctx, 0, 0, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Read(0, wait 1h) with a 100ms context error = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("returns at once when ended", func(t *testing.T) {
		p := startProcess(t, m, Spec{Argv: []string{"sh", "-c", "exit 4"}})
		<-p.Done()
		r, err := p.Read(context.Background(), 0, 0, time.Hour)
		if err != nil || !r.Closed || !r.Exited || r.ExitCode == nil || *r.ExitCode != 4 {
			t.Errorf("Read(0, wait 1h) on an ended process = closed %v exited %v code %s, %v; want closed, exited, 4", r.Closed, r.Exited, fmtCode(r.ExitCode), err)
		}
	})
	t.Run("wakes on the ending", func(t *testing.T) {
		p := startProcess(t, m, helperSpec(t, "sleep"))
		time.AfterFunc(100*time.Millisecond, func() { p.Terminate(StatusTerminated) })
		r, err := p.Read(context.Background(), 0, 0, time.Minute)
		if err != nil || !r.Closed || r.ExitCode != nil {
			t.Errorf("Read(0, wait 1m) across Terminate = closed %v code %s, %v; want closed, no code", r.Closed, fmtCode(r.ExitCode), err)
		}
	})
}

func TestWriteStdin(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "cat")
	spec.PipeStdin = true
	spec.Stdin = []byte("first\n")
	p := startProcess(t, m, spec)
	ctx := context.Background()
	steps := []struct {
		name    string
		data    string
		id      string
		close   bool
		want    StdinWrite
		wantErr error
	}{
		{"write", "a\n", "w1", false, StdinWrite{Written: 2}, nil},
		{"same id again", "a\n", "w1", false, StdinWrite{AlreadyWritten: 2, Duplicate: true}, nil},
		{"same id, other data", "x\n", "w1", false, StdinWrite{}, ErrWriteIDReused},
		{"same id, more data", "a\nmore\n", "w1", false, StdinWrite{}, ErrWriteIDReused},
		{"no id", "b\n", "", false, StdinWrite{Written: 2}, nil},
		{"no id again", "b\n", "", false, StdinWrite{Written: 2}, nil},
		{"write and close", "c\n", "w2", true, StdinWrite{Written: 2}, nil},
		{"the closing write again", "c\n", "w2", true, StdinWrite{AlreadyWritten: 2, Duplicate: true}, nil},
		{"first id still known", "a\n", "w1", false, StdinWrite{AlreadyWritten: 2, Duplicate: true}, nil},
		{"after close", "d\n", "w3", false, StdinWrite{}, ErrStdinClosed},
	}
	for _, s := range steps {
		got, err := p.WriteStdin(ctx, []byte(s.data), s.id, s.close)
		if got != s.want || !errors.Is(err, s.wantErr) {
			t.Errorf("%s: WriteStdin(%q, %q, %v) = %+v, %v, want %+v, %v", s.name, s.data, s.id, s.close, got, err, s.want, s.wantErr)
		}
	}
	if got := p.Result(); got.Status != StatusExited || string(got.Stdout.Data) != "first\na\nb\nb\nc\n" {
		t.Errorf("Result() = %q %q, want exited \"first\\na\\nb\\nb\\nc\\n\"", got.Status, got.Stdout.Data)
	}
	if got, err := p.WriteStdin(ctx, []byte("c\n"), "w2", true); !got.Duplicate || err != nil {
		t.Errorf("WriteStdin(w2) after the end = %+v, %v, want a duplicate", got, err)
	}
	if _, err := p.WriteStdin(ctx, []byte("e\n"), "w4", false); !errors.Is(err, ErrProcessExited) {
		t.Errorf("WriteStdin(w4) after the end error = %v, want ErrProcessExited", err)
	}
}

// TestWriteStdinRetryAddsClose: a retry of a whole write that adds close
// closes stdin, writing nothing again, and is no duplicate; once it closed,
// it is one.
func TestWriteStdinRetryAddsClose(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "cat")
	spec.PipeStdin = true
	p := startProcess(t, m, spec)
	ctx := context.Background()
	steps := []struct {
		name  string
		close bool
		want  StdinWrite
	}{
		{"write", false, StdinWrite{Written: 2}},
		{"its retry, which closes", true, StdinWrite{AlreadyWritten: 2}},
		{"the closing retry again", true, StdinWrite{AlreadyWritten: 2, Duplicate: true}},
		{"the first again", false, StdinWrite{AlreadyWritten: 2, Duplicate: true}},
	}
	for _, s := range steps {
		if got, err := p.WriteStdin(ctx, []byte("a\n"), "w1", s.close); got != s.want || err != nil {
			t.Errorf("%s: WriteStdin(a, w1, close %v) = %+v, %v; want %+v, nil", s.name, s.close, got, err, s.want)
		}
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("cat did not end: its stdin was not closed")
	}
	if got := p.Result(); got.Status != StatusExited || string(got.Stdout.Data) != "a\n" {
		t.Errorf("Result() = %s %q, want exited \"a\\n\"", got.Status, got.Stdout.Data)
	}
}

// TestWriteStdinRetryWritesOnlyWhatIsMissing is issue 14's scenario: a write
// of 200,000 bytes to a child that does not read yet is cut short once the
// pipe is full; its retry under the same write id writes only the rest, and
// the child reads exactly 200,000 bytes.
func TestWriteStdinRetryWritesOnlyWhatIsMissing(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "count-stdin-on-usr1")
	spec.PipeStdin = true
	p := startProcess(t, m, spec)
	readUntil(t, p, "ready\n")
	data := bytes.Repeat([]byte("0123456789"), 20_000)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	first, err := p.WriteStdin(ctx, data, "big", false)
	if !errors.Is(err, context.DeadlineExceeded) || first.Written == 0 || first.Written >= len(data) {
		t.Fatalf("WriteStdin(200,000 bytes) to a child that does not read = %+v, %v; want part of it written and DeadlineExceeded", first, err)
	}
	if !p.Signal(syscall.SIGUSR1) {
		t.Fatal("Signal(SIGUSR1) = false on a running process")
	}
	retry, err := p.WriteStdin(context.Background(), data, "big", true)
	if want := (StdinWrite{Written: len(data) - first.Written, AlreadyWritten: first.Written}); retry != want || err != nil {
		t.Fatalf("retried WriteStdin(big) = %+v, %v; want %+v", retry, err, want)
	}
	if again, err := p.WriteStdin(context.Background(), data, "big", true); !again.Duplicate || again.AlreadyWritten != len(data) || again.Written != 0 || err != nil {
		t.Errorf("WriteStdin(big) once whole = %+v, %v; want a duplicate of all %d bytes", again, err, len(data))
	}
	if got := p.Result(); got.Status != StatusExited || string(got.Stdout.Data) != "ready\n200000\n" {
		t.Errorf("the child read %q (%s), want ready then 200000", got.Stdout.Data, got.Status)
	}
}

// TestWriteStdinErrors: a process that has exited says so, whatever its
// stdin was; a running one whose stdin is not open says that.
func TestWriteStdinErrors(t *testing.T) {
	piped := func(s Spec) Spec { s.PipeStdin = true; return s }
	tests := []struct {
		name    string
		spec    Spec
		ended   bool
		close   bool
		wantErr error
	}{
		{"running, never piped", helperSpec(t, "sleep"), false, false, ErrStdinClosed},
		{"running, closed by a write", piped(helperSpec(t, "sleep")), false, true, ErrStdinClosed},
		{"exited, piped", piped(Spec{Argv: []string{"true"}}), true, false, ErrProcessExited},
		{"exited, never piped", Spec{Argv: []string{"true"}}, true, false, ErrProcessExited},
	}
	m := testManager()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProcess(t, m, tt.spec)
			if tt.ended {
				<-p.Done()
			}
			if tt.close {
				if _, err := p.WriteStdin(context.Background(), nil, "", true); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.WriteStdin(context.Background(), []byte("x"), "id", false); !errors.Is(err, tt.wantErr) || (tt.wantErr == ErrProcessExited) == errors.Is(err, ErrStdinClosed) {
				t.Errorf("WriteStdin() error = %v, want %v (and only it)", err, tt.wantErr)
			}
		})
	}
}

func TestWriteStdinClosed(t *testing.T) {
	m := testManager()
	tests := []struct {
		name string
		spec Spec
	}{
		{"no stdin", helperSpec(t, "sleep")},
		{"stdin bytes without PipeStdin", func() Spec { s := helperSpec(t, "sleep"); s.Stdin = []byte("x"); return s }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProcess(t, m, tt.spec)
			if _, err := p.WriteStdin(context.Background(), []byte("x"), "id", false); !errors.Is(err, ErrStdinClosed) {
				t.Errorf("WriteStdin() error = %v, want ErrStdinClosed", err)
			}
			if in := p.Info(); in.PipeStdin || in.StdinOpen {
				t.Errorf("Info() = PipeStdin %v StdinOpen %v, want false false", in.PipeStdin, in.StdinOpen)
			}
		})
	}
}

func TestWriteStdinDedupeWindow(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "cat")
	spec.PipeStdin = true
	p := startProcess(t, m, spec)
	ctx := context.Background()
	for i := range maxWriteIDs + 1 {
		if w, err := p.WriteStdin(ctx, []byte("x"), fmt.Sprint("id-", i), false); w.Duplicate || err != nil {
			t.Fatalf("WriteStdin(id-%d) = %+v, %v, want a write", i, w, err)
		}
	}
	tests := []struct {
		id, data string
		wantDup  bool
	}{
		{"id-1", "x", true}, // checked first: writing id-0 again forgets id-1
		{"id-4096", "x", true},
		{"id-0", "y", false}, // forgotten: a new write
	}
	for _, tt := range tests {
		if w, err := p.WriteStdin(ctx, []byte(tt.data), tt.id, false); w.Duplicate != tt.wantDup || err != nil {
			t.Errorf("WriteStdin(%q) after %d ids = %+v, %v, want duplicate %v", tt.id, maxWriteIDs+1, w, err, tt.wantDup)
		}
	}
	if _, err := p.WriteStdin(ctx, nil, "", true); err != nil {
		t.Fatalf("WriteStdin(close) error %v", err)
	}
	want := strings.Repeat("x", maxWriteIDs+1) + "y"
	if got := p.Result().Stdout.Data; string(got) != want {
		t.Errorf("Result().Stdout = %d bytes, want %d", len(got), len(want))
	}
}

// TestWriteStdinHonoursContext writes to a child that never reads: the pipe
// fills, and the write must return when its context ends, as must a write
// waiting for its turn.
func TestWriteStdinHonoursContext(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "sleep")
	spec.PipeStdin = true
	p := startProcess(t, m, spec)
	big := make([]byte, 4<<20)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cut, err := p.WriteStdin(ctx, big, "big", false)
	if !errors.Is(err, context.DeadlineExceeded) || cut.Written >= len(big) {
		t.Fatalf("WriteStdin(4 MiB) to a child that does not read = %+v, %v, want fewer bytes and DeadlineExceeded", cut, err)
	}
	// The cut write's id remembers how far it got, and its retry resumes there.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if w, err := p.WriteStdin(ctx2, big, "big", false); w.Duplicate || w.AlreadyWritten != cut.Written || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WriteStdin(big) again = %+v, %v, want %d bytes already written, no duplicate, and DeadlineExceeded", w, err, cut.Written)
	}

	// One write blocks until the process ends; another waits for its turn.
	blocked := make(chan error, 1)
	go func() {
		_, err := p.WriteStdin(context.Background(), big, "", false)
		blocked <- err
	}()
	waitFor(t, "the blocked write to hold the turn", func() bool { return len(p.stdin.turn) == 1 })
	ctx3, cancel3 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel3()
	if w, err := p.WriteStdin(ctx3, []byte("x"), "", false); w.Written != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WriteStdin(x) behind a blocked write = %+v, %v, want nothing written, DeadlineExceeded", w, err)
	}
	p.Terminate(StatusTerminated)
	select {
	case err := <-blocked:
		// The pipe may break before the exit is known: either error says so.
		if !errors.Is(err, ErrProcessExited) && !errors.Is(err, ErrStdinClosed) {
			t.Errorf("blocked WriteStdin() after the process ended error = %v, want ErrProcessExited or ErrStdinClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("blocked WriteStdin() did not return after the process ended")
	}
}

func TestWriteStdinSerialized(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "cat")
	spec.PipeStdin = true
	p := startProcess(t, m, spec)
	const writers, size = 8, 64 << 10
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			data := bytes.Repeat([]byte{byte('a' + i)}, size)
			if w, err := p.WriteStdin(context.Background(), data, fmt.Sprint(i), false); w.Written != size || err != nil {
				t.Errorf("WriteStdin(%d × %q) = %+v, %v", size, rune('a'+i), w, err)
			}
		})
	}
	wg.Wait()
	if _, err := p.WriteStdin(context.Background(), nil, "", true); err != nil {
		t.Fatal(err)
	}
	out := p.Result().Stdout.Data
	if len(out) != writers*size {
		t.Fatalf("Result().Stdout = %d bytes, want %d", len(out), writers*size)
	}
	seen := map[byte]bool{}
	for off := 0; off < len(out); off += size {
		run := out[off : off+size]
		if c := run[0]; seen[c] || !bytes.Equal(run, bytes.Repeat([]byte{c}, size)) {
			t.Fatalf("output at %d is not one whole write of its own", off)
		}
		seen[run[0]] = true
	}
}

func TestSignalReachesTheGroup(t *testing.T) {
	tests := []struct {
		name string
		sig  syscall.Signal
	}{
		{"hangup", syscall.SIGHUP},
		{"interrupt", syscall.SIGINT},
	}
	m := testManager()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProcess(t, m, helperSpec(t, "signal-tree"))
			readUntil(t, p, "ready child\n", "ready grandchild\n")
			if !p.Signal(tt.sig) {
				t.Fatalf("Signal(%v) = false on a running process", tt.sig)
			}
			sig := unix.SignalName(tt.sig)
			readUntil(t, p, "child got "+sig+"\n", "grandchild got "+sig+"\n")
			if got := p.Result(); got.Status != StatusExited || got.ExitCode == nil || *got.ExitCode != 0 {
				t.Errorf("Result() after Signal(%v) = %q %s, want exited 0 (%q)", tt.sig, got.Status, fmtCode(got.ExitCode), got.Stderr.Data)
			}
		})
	}
}

// TestSignalEndings: a signal sent by Signal is the child's own ending.
func TestSignalEndings(t *testing.T) {
	tests := []struct {
		name       string
		sig        syscall.Signal
		wantSignal string
	}{
		{"interrupt", syscall.SIGINT, "SIGINT"},
		{"terminate", syscall.SIGTERM, "SIGTERM"},
		{"kill", syscall.SIGKILL, "SIGKILL"},
		{"hangup", syscall.SIGHUP, "SIGHUP"},
	}
	m := testManager()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProcess(t, m, Spec{Argv: []string{"sleep", "60"}})
			if !p.Signal(tt.sig) {
				t.Fatalf("Signal(%s) = false on a running process", tt.wantSignal)
			}
			got := p.Result()
			if got.Status != StatusSignaled || got.Signal != tt.wantSignal || got.ExitCode != nil {
				t.Errorf("Result() after Signal(%s) = %q %q %s, want signaled %s", tt.wantSignal, got.Status, got.Signal, fmtCode(got.ExitCode), tt.wantSignal)
			}
			if p.Signal(tt.sig) {
				t.Errorf("Signal(%s) = true on an ended process, want false", tt.wantSignal)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	m := testManager()
	spec := helperSpec(t, "sleep")
	spec.PipeStdin = true
	spec.Dir = "/tmp"
	p := startProcess(t, m, spec)
	in := p.Info()
	if in.ID != p.ID() || in.Pid != p.Pid() || !slices.Equal(in.Argv, spec.Argv) || in.Dir != "/tmp" {
		t.Errorf("Info() = %q %d %q %q, want %q %d %q /tmp", in.ID, in.Pid, in.Argv, in.Dir, p.ID(), p.Pid(), spec.Argv)
	}
	if in.Status != StatusRunning || in.ExitCode != nil || !in.EndedAt.IsZero() || in.Duration < 0 || in.StartedAt.IsZero() {
		t.Errorf("Info() running = %q code %s ended %v duration %v, want running, nil, zero, >= 0", in.Status, fmtCode(in.ExitCode), in.EndedAt, in.Duration)
	}
	if !in.PipeStdin || !in.StdinOpen || in.NextSeq != 1 {
		t.Errorf("Info() = PipeStdin %v StdinOpen %v NextSeq %d, want true true 1", in.PipeStdin, in.StdinOpen, in.NextSeq)
	}
	in.Argv[0] = "changed"
	if p.Info().Argv[0] == "changed" {
		t.Errorf("Info().Argv shares the process's argv")
	}

	q, err := m.Run(context.Background(), Spec{Argv: []string{"echo", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	in = q.Info()
	if in.Status != StatusExited || in.ExitCode == nil || *in.ExitCode != 0 || in.StdoutBytes != 3 || in.NextSeq != 2 {
		t.Errorf("Info() of echo hi = %q %s %d bytes next %d, want exited 0, 3 bytes, next 2", in.Status, fmtCode(in.ExitCode), in.StdoutBytes, in.NextSeq)
	}
	if in.EndedAt.Before(in.StartedAt) || in.Duration != in.EndedAt.Sub(in.StartedAt) || in.StdinOpen {
		t.Errorf("Info() of echo hi = started %v ended %v duration %v stdin open %v, want ended-started and closed", in.StartedAt, in.EndedAt, in.Duration, in.StdinOpen)
	}
}

// TestResultFromRingOrCollector: a result is the same whether the ring still
// holds the stream whole (and the result is derived from it) or not.
func TestResultFromRingOrCollector(t *testing.T) {
	script := "printf 'HEAD'; head -c 5000 /dev/zero; printf 'TAIL'; printf 'err' >&2"
	tests := []struct {
		name      string
		ringBytes int
		maxOutput int
		wantOut   string
		wantTrunc bool
	}{
		{"ring whole, result whole", 1 << 20, 1 << 20, "HEAD" + strings.Repeat("\x00", 5000) + "TAIL", false},
		{"ring whole, result cut", 1 << 20, 10, "HEAD\x00\x00TAIL", true},
		{"ring evicted, result whole", 100, 1 << 20, "HEAD" + strings.Repeat("\x00", 5000) + "TAIL", false},
		{"ring evicted, result cut", 100, 10, "HEAD\x00\x00TAIL", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, OutputRingBytes: tt.ringBytes})
			got := run(t, m, Spec{Argv: []string{"sh", "-c", script}, MaxOutputBytes: tt.maxOutput})
			wantOut := tt.wantOut
			if string(got.Stdout.Data) != wantOut || got.Stdout.Total != 5008 || got.Stdout.Truncated != tt.wantTrunc {
				t.Errorf("Result().Stdout = %q (%d bytes) total %d truncated %v, want %d bytes total 5008 truncated %v", trim(got.Stdout.Data), len(got.Stdout.Data), got.Stdout.Total, got.Stdout.Truncated, len(wantOut), tt.wantTrunc)
			}
			if string(got.Stderr.Data) != "err" {
				t.Errorf("Result().Stderr = %q, want err", got.Stderr.Data)
			}
		})
	}
}

func trim(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q...%q", b[:20], b[len(b)-20:])
	}
	return fmt.Sprintf("%q", b)
}

// TestStdinClosedByTheChild: once the child has closed its end of a piped
// stdin (and nothing else of it reads), stdin shows closed, and a write is
// ErrStdinClosed, not a write that seems to go in, as stdin stays open
// "until a write closes it, the child closes its end or the process ends".
func TestStdinClosedByTheChild(t *testing.T) {
	m := testManager()
	p := startProcess(t, m, Spec{Argv: []string{"sh", "-c", "exec 0<&-; echo closed; sleep 5"}, PipeStdin: true})
	readUntil(t, p, "closed\n")
	if in := p.Info(); in.StdinOpen {
		t.Errorf("Info().StdinOpen = true after the child closed its end, want false")
	}
	if _, err := p.WriteStdin(context.Background(), nil, "", false); !errors.Is(err, ErrStdinClosed) {
		t.Errorf("an empty WriteStdin after the child closed its end = %v, want ErrStdinClosed", err)
	}
	p.Terminate(StatusTerminated)
	<-p.Done()
}

// TestWriteToAProcessThatExitsMeanwhile: a write that blocks on a child that
// never reads, and fails as the child exits, is ErrProcessExited however
// soon after the exit the child is reaped (the broken pipe comes first).
func TestWriteToAProcessThatExitsMeanwhile(t *testing.T) {
	m := testManager()
	data := bytes.Repeat([]byte("y"), 200_000) // beyond a pipe's 64 KiB
	for i := range 8 {
		p := startProcess(t, m, Spec{Argv: []string{"sleep", "0.1"}, PipeStdin: true})
		if _, err := p.WriteStdin(context.Background(), data, "", false); !errors.Is(err, ErrProcessExited) {
			t.Errorf("run %d: a write to a child that exits without reading = %v, want ErrProcessExited", i, err)
		}
		<-p.Done()
	}
}
