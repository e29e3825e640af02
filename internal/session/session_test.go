package session

import (
	"context"
	"errors"
	"os"
	osexec "os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// run runs script under l with os/exec, as the service runs it through
// exec, and ends the lease with its ending.
func run(t *testing.T, l *Lease, script string) (Outcome, string) {
	t.Helper()
	c, err := l.Command(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	for name, value := range c.Env {
		cmd.Env = append(cmd.Env, name+"="+value)
	}
	cmd.Dir = l.Cwd()
	out, _ := cmd.Output()
	code := cmd.ProcessState.ExitCode()
	o := l.End(script, "p-test", exec.Result{Status: exec.StatusExited, ExitCode: &code})
	l.Settle()
	return o, string(out)
}

func newTable(t *testing.T, opts Options) *Table {
	t.Helper()
	tb, err := New(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.Close)
	return tb
}

func create(t *testing.T, tb *Table, id string) {
	t.Helper()
	l, err := tb.Create(id, Config{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Env: map[string]string{"PATH": "/usr/bin:/bin"}, Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := run(t, l, ":"); !o.StateKept {
		t.Fatalf("first command: %s", o.Reason)
	}
}

func TestTableOrdersCommandsAndForks(t *testing.T) {
	tb := newTable(t, Options{History: 2})
	create(t, tb, "a")
	l, err := tb.Begin("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Begin("a"); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Begin: %v, want ErrBusy", err)
	}
	if _, err := tb.Begin("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Begin of an unknown session: %v, want ErrNotFound", err)
	}
	o, _ := run(t, l, "cd /tmp; X=1; f() { :; }")
	if !o.StateKept || o.Cwd != "/tmp" || !slices.Contains(o.Changes.Variables.Added, "X") || !slices.Contains(o.Changes.Functions.Added, "f") {
		t.Fatalf("outcome %+v", o)
	}
	if _, err := tb.Fork("a", "a"); !errors.Is(err, ErrExists) {
		t.Fatalf("fork onto its own id: %v, want ErrExists", err)
	}
	if _, err := tb.Fork("a", "b"); err != nil {
		t.Fatal(err)
	}
	lb, err := tb.Begin("b")
	if err != nil {
		t.Fatal(err)
	}
	if _, out := run(t, lb, `echo "$PWD $X"; unset X`); out != "/tmp 1\n" {
		t.Errorf("fork printed %q", out)
	}
	la, _ := tb.Begin("a")
	if _, out := run(t, la, `echo "${X-unset}"`); out != "1\n" {
		t.Errorf("parent printed %q after its fork's unset", out)
	}
	la, _ = tb.Begin("a")
	run(t, la, "true")
	info, err := tb.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.History) != 2 || info.Commands != 3 || info.History[1].Script != "true" {
		t.Errorf("history %+v (%d commands), want the last 2 of 3", info.History, info.Commands)
	}
	fork, _ := tb.Get("b")
	if fork.ForkedFrom != "a" || !slices.Contains(info.Variables, "X") || slices.Contains(fork.Variables, "X") {
		t.Errorf("fork %+v, parent %+v", fork, info)
	}
}

func TestTableKeepsStateOfAKilledCommand(t *testing.T) {
	tb := newTable(t, Options{})
	create(t, tb, "a")
	l, _ := tb.Begin("a")
	c, err := l.Command("cd /; Y=1")
	if err != nil {
		t.Fatal(err)
	}
	_ = c
	o := l.End("cd /; Y=1", "p-1", exec.Result{Status: exec.StatusTimedOut})
	l.Settle()
	if o.StateKept || !strings.Contains(o.Reason, "timed_out") {
		t.Fatalf("a timed-out command's outcome %+v", o)
	}
	info, _ := tb.Get("a")
	if info.History[0].StateKept || info.Cwd == "/" {
		t.Errorf("after a killed command: %+v", info)
	}
}

func TestTableBounds(t *testing.T) {
	tb := newTable(t, Options{MaxSessions: 1, IdleTimeout: 50 * time.Millisecond})
	create(t, tb, "a")
	if _, err := tb.Create("b", Config{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}}, nil); !errors.Is(err, ErrTooMany) {
		t.Fatalf("a second session: %v, want ErrTooMany", err)
	}
	if _, err := tb.Create("z", Config{Shell: shellsnap.Shell{Name: "sh", Path: "/bin/sh"}}, nil); !errors.Is(err, shellsnap.ErrSessionShell) {
		t.Fatalf("an sh session: %v, want ErrSessionShell", err)
	}
	// The idle end is checked a quarter of the idle time apart: wait for it,
	// bounded.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := tb.Get("a"); errors.Is(err, ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle session did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := tb.Stats(); st.Idle != 1 || st.Active != 0 {
		t.Errorf("stats %+v", st)
	}
	tb.Close()
	if _, err := tb.Begin("a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Begin after Close: %v, want ErrClosed", err)
	}
}

// TestAbortLeavesTheSessionAsItWas: a lease given back with Abort, its
// command built but never run, leaves its session exactly as it was (state,
// cwd, history, counts, last use), and its files gone; a session whose first
// command is aborted was never created, and its id is free again.
func TestAbortLeavesTheSessionAsItWas(t *testing.T) {
	tb := newTable(t, Options{})
	create(t, tb, "a")
	l, _ := tb.Begin("a")
	run(t, l, "cd /tmp; X=1")
	before, _ := tb.Get("a")
	stats := tb.Stats()

	l, err := tb.Begin("a")
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Command("cd /; X=2")
	if err != nil {
		t.Fatal(err)
	}
	l.Abort()
	if after, _ := tb.Get("a"); !reflect.DeepEqual(after, before) {
		t.Errorf("after Abort the session is\n%+v\nwant it as before\n%+v", after, before)
	}
	if got := tb.Stats(); got != stats {
		t.Errorf("after Abort the stats are %+v, want %+v", got, stats)
	}
	if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the aborted command's directory %s: %v, want it removed", c.Dir, err)
	}
	l, err = tb.Begin("a")
	if err != nil {
		t.Fatalf("Begin after Abort: %v", err)
	}
	if _, out := run(t, l, `echo "$PWD $X"`); out != "/tmp 1\n" {
		t.Errorf("the command after an aborted one printed %q, want %q", out, "/tmp 1\n")
	}

	first, err := tb.Create("b", Config{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.Abort()
	if _, err := tb.Get("b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a session whose first command was aborted: %v, want ErrNotFound", err)
	}
	create(t, tb, "b")
}

// TestHistoryCutsScriptsAtACharacter: a script longer than the history
// keeps is cut to at most 256 bytes at a character's boundary, never inside
// one, so that the history stays text (JSON would carry the half a
// character as U+FFFD).
func TestHistoryCutsScriptsAtACharacter(t *testing.T) {
	tb := newTable(t, Options{})
	create(t, tb, "a")
	tests := []struct {
		name, script, want string
	}{
		{"ascii", "#" + strings.Repeat("x", 300), "#" + strings.Repeat("x", 255)},
		{"a character across the cut", ":" + strings.Repeat("é", 150), ":" + strings.Repeat("é", 127)},
		{"a character ending at the cut", ":" + strings.Repeat("€", 100), ":" + strings.Repeat("€", 85)},
		{"a four-byte character across the cut", ":" + strings.Repeat("x", 253) + "𝄞", ":" + strings.Repeat("x", 253)},
		{"short", ": é", ": é"},
	}
	for _, tt := range tests {
		l, err := tb.Begin("a")
		if err != nil {
			t.Fatal(err)
		}
		run(t, l, tt.script)
		info, _ := tb.Get("a")
		got := info.History[len(info.History)-1].Script
		if got != tt.want || len(got) > 256 || !utf8.ValidString(got) {
			t.Errorf("%s: history keeps %q (%d bytes), want %q (%d bytes)", tt.name, got, len(got), tt.want, len(tt.want))
		}
	}
}
