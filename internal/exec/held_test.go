package exec

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// holdShell holds a sh that prints "up", waits for its go-ahead on fd 3, and
// runs it.
func holdShell(t *testing.T, m *Manager) *Held {
	t.Helper()
	h, err := m.Hold(Spec{Argv: []string{"sh", "-c", `echo up; msg=$(cat <&3); exec 3<&-; eval "$msg"`}})
	if err != nil {
		t.Fatalf("Hold() error %v", err)
	}
	return h
}

func TestHeldReleaseRunsTheMessageAsAnOrdinaryProcess(t *testing.T) {
	m := testManager()
	h := holdShell(t, m)
	time.Sleep(100 * time.Millisecond) // held: no limit runs, it is nowhere to be seen
	if n := len(m.List()); n != 0 || m.Running() != 0 {
		t.Fatalf("with one held process: List() has %d, Running() = %d, want 0 and 0", n, m.Running())
	}
	released := time.Now()
	p, err := h.Release(Spec{ID: "p1", Argv: []string{"shown"}, Timeout: time.Minute}, []byte("echo released; if { true <&3; } 2>/dev/null; then echo fd3 open; else echo fd3 closed; fi"))
	if err != nil {
		t.Fatalf("Release() error %v", err)
	}
	p.Wait(context.Background())
	r := p.Result()
	if want := "up\nreleased\nfd3 closed\n"; r.Status != StatusExited || string(r.Stdout.Data) != want {
		t.Fatalf("released process: status %q, stdout %q; want exited, %q", r.Status, r.Stdout.Data, want)
	}
	got, ok := m.Get("p1")
	if !ok || got != p || p.Info().Argv[0] != "shown" {
		t.Fatalf("after Release: Get(p1) = %v, %v; argv %q; want the process and the argv it was released with", got, ok, p.Info().Argv)
	}
	if in := p.Info(); in.StartedAt.Before(released) || r.Duration != in.EndedAt.Sub(in.StartedAt) {
		t.Errorf("released process started at %v, %v after Release was called, duration %v; want its run time counted from Release, not from Hold", in.StartedAt, in.StartedAt.Sub(released), r.Duration)
	}
	if _, err := h.Release(Spec{}, nil); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second Release() error %v, want ErrNotHeld", err)
	}
}

func TestHeldLimitsStartAtRelease(t *testing.T) {
	m := testManager()
	h, err := m.Hold(Spec{Argv: []string{"sh", "-c", `cat <&3 >/dev/null; sleep 10`}, Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	select {
	case <-h.Done():
		t.Fatal("held process ended before Release: a held spec's Timeout must not apply")
	default:
	}
	p, err := h.Release(Spec{Timeout: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Wait(context.Background())
	if r := p.Result(); r.Status != StatusTimedOut {
		t.Fatalf("released with a 100 ms timeout: status %q, want %q", r.Status, StatusTimedOut)
	}
}

func TestHeldDiscardEndsTheGroupAndLeavesNoTrace(t *testing.T) {
	m := testManager()
	h := holdShell(t, m)
	pid := h.p.Pid()
	h.Discard()
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("discarded held process still running after 5 s")
	}
	if pidAlive(pid) || len(m.List()) != 0 {
		t.Fatalf("after Discard: pid alive %v, List() %d entries; want gone and none", pidAlive(pid), len(m.List()))
	}
	if _, err := h.Release(Spec{}, nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Release() after Discard error %v, want ErrNotHeld", err)
	}
}

func TestHeldThatEndedCannotBeReleased(t *testing.T) {
	m := testManager()
	h, err := m.Hold(Spec{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	<-h.Done()
	if _, err := h.Release(Spec{}, nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Release() of an ended held process error %v, want ErrNotHeld", err)
	}
}

func TestHeldReleaseRespectsTheTable(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, MaxRunning: 1})
	h := holdShell(t, m)
	defer h.Discard()
	busy, err := m.Start(Spec{ID: "busy", Argv: []string{"sleep", "10"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Release(Spec{ID: "busy"}, nil); !errors.Is(err, ErrProcessExists) {
		t.Errorf("Release() with a taken id error %v, want ErrProcessExists", err)
	}
	if _, err := h.Release(Spec{ID: "other"}, nil); !errors.Is(err, ErrTooManyProcesses) {
		t.Errorf("Release() beyond MaxRunning error %v, want ErrTooManyProcesses", err)
	}
	busy.Terminate(StatusTerminated)
	busy.Wait(context.Background())
	p, err := h.Release(Spec{ID: "other"}, []byte("echo ok"))
	if err != nil {
		t.Fatalf("Release() once a slot is free: error %v, want the process still held and released now", err)
	}
	p.Wait(context.Background())
	if out := string(p.Result().Stdout.Data); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("stdout %q, want it to end with ok", out)
	}
}

func TestShutdownEndsHeldProcesses(t *testing.T) {
	m := testManager()
	h := holdShell(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() error %v", err)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("Shutdown() returned with a held process still running")
	}
	if _, err := m.Hold(Spec{Argv: []string{"true"}}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("Hold() after Shutdown error %v, want ErrShuttingDown", err)
	}
}

// TestReaperPausesWhileOnlyHeldProcessesLive: the reaper's looks at /proc
// pause while every live group is a held process that started nothing, and
// resume once one is released.
func TestReaperPausesWhileOnlyHeldProcessesLive(t *testing.T) {
	m := testManager()
	h, err := m.Hold(Spec{Argv: []string{"sh", "-c", `read -r msg <&3; eval "$msg"`}})
	if err != nil {
		t.Fatalf("Hold() error %v", err)
	}
	defer h.Discard()
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s", what)
			}
		}
	}
	until("the looks pause with one held process", testReaper.paused.Load)
	p, err := h.Release(Spec{}, []byte("sleep 5\n"))
	if err != nil {
		t.Fatalf("Release() error %v", err)
	}
	until("the looks resume once it is released", func() bool { return !testReaper.paused.Load() })
	// It runs a client's command now: the looks go on while it lives.
	time.Sleep(1500 * time.Millisecond)
	if testReaper.paused.Load() {
		t.Errorf("the looks paused while a released process runs")
	}
	p.Terminate(StatusTerminated)
	p.Wait(context.Background())
}

// TestHeldReadyWhenItClosesFd4 checks Ready: it stays open while the held
// process keeps its fd 4, and is closed once it closes it, as a standby's
// wait line does, or once the process ends without closing it.
func TestHeldReadyWhenItClosesFd4(t *testing.T) {
	m := testManager()
	// It closes fd 4 only after its go-ahead, so Ready cannot be closed
	// before Release.
	h, err := m.Hold(Spec{Argv: []string{"sh", "-c", `read -r msg <&3; exec 3<&- 4>&-; sleep 10`}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Ready():
		t.Fatal("Ready closed while the held process keeps its fd 4")
	case <-time.After(100 * time.Millisecond):
	}
	p, err := h.Release(Spec{}, []byte("go\n"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("Ready not closed after the released process closed its fd 4")
	}
	select {
	case <-p.Done():
		t.Fatal("the released process ended: Ready must tell its fd 4 closed, not its end")
	default:
	}
	p.Terminate(StatusTerminated)
	p.Wait(context.Background())

	// One that never closes it: Ready is closed when it ends.
	h, err = m.Hold(Spec{Argv: []string{"sh", "-c", `cat <&3 >/dev/null`}})
	if err != nil {
		t.Fatal(err)
	}
	h.Discard()
	select {
	case <-h.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("Ready not closed after the held process was discarded")
	}
}
