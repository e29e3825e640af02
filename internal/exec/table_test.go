package exec

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

func ids(procs []*Process) []string {
	out := []string{}
	for _, p := range procs {
		out = append(out, p.ID())
	}
	return out
}

// tableSize returns how many processes the table holds, without sweeping it.
func tableSize(m *Manager) (entries int, retainedBytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.procs), m.retained
}

// waitFor polls cond until it holds, failing the test after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunSharesTheTable(t *testing.T) {
	m := testManager()
	bg := startProcess(t, m, Spec{ID: "background", Argv: []string{"sleep", "60"}})
	p, err := m.Run(context.Background(), Spec{Argv: []string{"echo", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.Get(p.ID()); !ok || got != p {
		t.Errorf("Get(%q) of a process from Run = %v, %v, want it", p.ID(), got, ok)
	}
	if got, want := ids(m.List()), []string{bg.ID(), p.ID()}; !slices.Equal(got, want) {
		t.Errorf("List() = %q, want %q in start order", got, want)
	}
	r, err := p.Read(context.Background(), 0, 0, 0)
	if err != nil || streamText(r.Chunks, Stdout) != "hi\n" || !r.Closed {
		t.Errorf("Read(0) of a process from Run = %q closed %v, %v, want \"hi\\n\" closed", streamText(r.Chunks, Stdout), r.Closed, err)
	}
	if _, ok := m.Get("no-such-id"); ok {
		t.Errorf("Get(no-such-id) = true, want false")
	}
}

func TestProcessExists(t *testing.T) {
	m := testManager()
	running := startProcess(t, m, Spec{ID: "running", Argv: []string{"sleep", "60"}})
	if _, err := m.Run(context.Background(), Spec{ID: "retained", Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		want error
	}{
		{"running", "running", ErrProcessExists},
		{"retained", "retained", ErrProcessExists},
		{"free", "free", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := m.Start(Spec{ID: tt.id, Argv: []string{"true"}})
			if !errors.Is(err, tt.want) {
				t.Errorf("Start(ID %q) error = %v, want %v", tt.id, err, tt.want)
			}
			if err == nil && p.ID() != tt.id {
				t.Errorf("Start(ID %q).ID() = %q", tt.id, p.ID())
			}
		})
	}
	if got, _ := m.Get("running"); got != running {
		t.Errorf("Get(running) after a refused Start = %v, want the first process", got)
	}
}

// TestProcessExistsRace starts one id from many goroutines: exactly one wins.
func TestProcessExistsRace(t *testing.T) {
	m := testManager()
	const n = 8
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    int
		others []error
	)
	for range n {
		wg.Go(func() {
			p, err := m.Start(Spec{ID: "same", Argv: []string{"sleep", "60"}})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
				t.Cleanup(func() { p.Terminate(StatusTerminated); <-p.Done() })
			} else {
				others = append(others, err)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d concurrent Start(ID same) succeeded %d times, want once", n, won)
	}
	for _, err := range others {
		if !errors.Is(err, ErrProcessExists) {
			t.Errorf("losing Start(ID same) error = %v, want ErrProcessExists", err)
		}
	}
}

func TestSpawnFailureFreesTheID(t *testing.T) {
	m := testManager()
	if _, err := m.Start(Spec{ID: "x", Argv: []string{"/no/such/program"}}); !errors.Is(err, ErrSpawn) {
		t.Fatalf("Start(missing program) error = %v, want ErrSpawn", err)
	}
	if _, ok := m.Get("x"); ok {
		t.Errorf("Get(x) after a failed spawn = true, want false")
	}
	if _, err := m.Run(context.Background(), Spec{ID: "x", Argv: []string{"true"}}); err != nil {
		t.Errorf("Run(ID x) after a failed spawn error = %v, want none", err)
	}
}

func TestMaxRunning(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, MaxRunning: 2})
	a := startProcess(t, m, Spec{Argv: []string{"sleep", "60"}})
	startProcess(t, m, Spec{Argv: []string{"sleep", "60"}})
	if _, err := m.Start(Spec{Argv: []string{"true"}}); !errors.Is(err, ErrTooManyProcesses) {
		t.Fatalf("third Start with MaxRunning 2 error = %v, want ErrTooManyProcesses", err)
	}
	if _, err := m.Run(context.Background(), Spec{Argv: []string{"true"}}); !errors.Is(err, ErrTooManyProcesses) {
		t.Fatalf("Run with MaxRunning 2 running error = %v, want ErrTooManyProcesses", err)
	}
	a.Terminate(StatusTerminated)
	<-a.Done()
	if _, err := m.Run(context.Background(), Spec{Argv: []string{"true"}}); err != nil {
		t.Errorf("Run after one of 2 ended error = %v, want none", err)
	}
	if got := m.Running(); got != 1 {
		t.Errorf("Running() = %d, want 1", got)
	}
}

func TestRetentionExpiry(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, Retention: 100 * time.Millisecond})
	for _, id := range []string{"a", "b", "c"} {
		if _, err := m.Run(context.Background(), Spec{ID: id, Argv: []string{"echo", id}}); err != nil {
			t.Fatal(err)
		}
	}
	// The timer forgets them; nothing needs to call Get or List.
	waitFor(t, "the retained processes to expire", func() bool {
		n, bytes := tableSize(m)
		return n == 0 && bytes == 0
	})
	if got := m.List(); len(got) != 0 {
		t.Errorf("List() after the retention = %q, want none", ids(got))
	}
	if _, err := m.Run(context.Background(), Spec{ID: "a", Argv: []string{"true"}}); err != nil {
		t.Errorf("Run(ID a) after a expired error = %v, want none", err)
	}
}

func TestRetentionKeepsRunning(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, Retention: 10 * time.Millisecond})
	p := startProcess(t, m, Spec{Argv: []string{"sleep", "60"}})
	if _, err := m.Run(context.Background(), Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the finished process to expire", func() bool { n, _ := tableSize(m); return n == 1 })
	if got, ok := m.Get(p.ID()); !ok || got != p {
		t.Errorf("Get(running) after the retention = %v, %v, want the running process", got, ok)
	}
}

func TestRetainedBounds(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		bytes int // output of each process
		want  []string
	}{
		{"count", Options{MaxRetained: 2}, 10, []string{"b", "c"}},
		{"bytes", Options{MaxRetainedOutputBytes: 2500}, 1000, []string{"b", "c"}},
		{"one over the byte bound", Options{MaxRetainedOutputBytes: 500}, 1000, []string{}},
		{"within both", Options{MaxRetained: 3, MaxRetainedOutputBytes: 1 << 20}, 1000, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Grace, opts.Drain = 300*time.Millisecond, 50*time.Millisecond
			m := NewManager(opts)
			for _, id := range []string{"a", "b", "c"} {
				spec := Spec{ID: id, Argv: []string{"head", "-c", strconv.Itoa(tt.bytes), "/dev/zero"}}
				if _, err := m.Run(context.Background(), spec); err != nil {
					t.Fatal(err)
				}
			}
			if got := ids(m.List()); !slices.Equal(got, tt.want) {
				t.Errorf("List() after 3 processes of %d bytes = %q, want %q", tt.bytes, got, tt.want)
			}
			if _, bytes := tableSize(m); bytes > m.opts.MaxRetainedOutputBytes {
				t.Errorf("retained bytes = %d, beyond MaxRetainedOutputBytes %d", bytes, m.opts.MaxRetainedOutputBytes)
			}
		})
	}
}

// TestTableBoundedOverManyProcesses runs many short processes: the table and
// its queue of finished processes stay within the bounds.
func TestTableBoundedOverManyProcesses(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 10 * time.Millisecond, MaxRetained: 5})
	for range 60 {
		if _, err := m.Run(context.Background(), Spec{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	entries, queued, capacity := len(m.procs), len(m.finished)-m.head, cap(m.finished)
	m.mu.Unlock()
	if entries != 5 || queued != 5 || capacity > 128 {
		t.Errorf("after 60 processes with MaxRetained 5: %d entries, %d queued, queue capacity %d; want 5, 5, bounded", entries, queued, capacity)
	}
}

// TestSpawnIsUnlisted: a spawned process runs like a started one, but outside
// the table: no id, not listed, not counted against MaxRunning; Shutdown
// ends it all the same.
func TestSpawnIsUnlisted(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, MaxRunning: 1})
	startProcess(t, m, Spec{ID: "busy", Argv: []string{"sleep", "60"}})
	p, err := m.Spawn(Spec{ID: "ignored", Argv: []string{"sh", "-c", "echo out; echo err >&2; sleep 60"}, DiscardStderr: true})
	if err != nil {
		t.Fatalf("Spawn() with MaxRunning processes running: error %v, want it spawned", err)
	}
	readUntil(t, p, "out\n")
	if _, ok := m.Get("ignored"); ok || p.ID() != "" || !slices.Equal(ids(m.List()), []string{"busy"}) || m.Running() != 1 {
		t.Errorf("with a spawned process: Get(ignored) %v, ID %q, List %q, Running %d; want not found, no id, only busy, 1", ok, p.ID(), ids(m.List()), m.Running())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	if r := p.Result(); r.Status != StatusShutdown || string(r.Stdout.Data) != "out\n" || r.Stderr.Total != 0 {
		t.Errorf("spawned process after Shutdown = %s, stdout %q, %d stderr bytes; want shutdown, out, none (discarded)", r.Status, r.Stdout.Data, r.Stderr.Total)
	}
	if !slices.Equal(ids(m.List()), []string{"busy"}) {
		t.Errorf("List() after the end = %q, want only busy: a spawned process is never retained", ids(m.List()))
	}
	if _, err := m.Spawn(Spec{Argv: []string{"true"}}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Spawn() after Shutdown error %v, want ErrShuttingDown", err)
	}
}

// TestOnForgetFollowsTheTable: the hook hears of every process the table
// forgets, once, whether the bounds or the retention dropped it, and never of
// a running or an unlisted one.
func TestOnForgetFollowsTheTable(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond, MaxRetained: 2, Retention: 200 * time.Millisecond})
	var mu sync.Mutex
	forgotten := map[string]int{}
	m.OnForget(func(p *Process) {
		mu.Lock()
		defer mu.Unlock()
		forgotten[p.ID()]++
	})
	seen := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(forgotten)
	}
	running := startProcess(t, m, Spec{ID: "running", Argv: []string{"sleep", "60"}})
	defer running.Terminate(StatusTerminated)
	unlisted, err := m.Spawn(Spec{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	<-unlisted.Done()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := m.Run(context.Background(), Spec{ID: id, Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := seen(); len(got) != 1 || got["a"] != 1 {
		t.Errorf("forgotten after a third process ended with MaxRetained 2 = %v, want a once", got)
	}
	waitFor(t, "the retention to run out", func() bool { return len(seen()) == 3 })
	if got, want := seen(), map[string]int{"a": 1, "b": 1, "c": 1}; !maps.Equal(got, want) {
		t.Errorf("forgotten after the retention = %v, want %v: the running and the unlisted process never", got, want)
	}
	if got := ids(m.List()); !slices.Equal(got, []string{"running"}) {
		t.Errorf("List() = %q, want only the running process", got)
	}
}
