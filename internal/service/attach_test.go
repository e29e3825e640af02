package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
)

// TestAttachmentWritesWaitForTheReader: a request's stdin write waits at
// most Limits.StdinWriteBound for a child that does not read, and is cut
// short; an attachment's write, what a client types, waits for the child as
// long as the connection lasts, and reaches it whole.
func TestAttachmentWritesWaitForTheReader(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{Limits: Limits{StdinWriteBound: 100 * time.Millisecond}})
	data := []byte(strings.Repeat("0123456789", 20_000)) // beyond a pipe's 64 KiB
	for _, id := range []string{"request", "attached"} {
		gate := filepath.Join(t.TempDir(), "go")
		start(t, s, StartInput{ExecInput: ExecInput{ProcessID: id,
			Argv: []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.02; done; wc -c`, "sh", gate}}, PipeStdin: true})
		// The child reads once the bound is long past.
		time.AfterFunc(500*time.Millisecond, func() { os.WriteFile(gate, nil, 0o644) })
		var err error
		if id == "request" {
			_, err = s.WriteStdin(context.Background(), id, StdinInput{Data: data})
			var nr *StdinNotReadError
			if !errors.As(err, &nr) || nr.Written >= len(data) {
				t.Errorf("a request's write to a child that does not read = %v; want it cut short at the bound", err)
			}
		} else {
			a, aerr := s.Attach(id, 0)
			if aerr != nil {
				t.Fatal(aerr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err = a.WriteStdin(ctx, data)
			cancel()
			a.Close()
			if err != nil {
				t.Errorf("an attachment's write = %v, want all of it written once the child reads", err)
			}
		}
		if _, err := s.WriteStdin(context.Background(), id, StdinInput{Close: true}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, id, exec.StatusExited)
		text, _ := output(t, s, id)
		if id == "attached" && text != "200000\n" {
			t.Errorf("the attached child counted %q, want exactly 200000 bytes", text)
		}
	}
}

// TestTerminalStdinIsNotClosed: close on a terminal's stdin is refused (a
// field error, nothing written), since a closed terminal input would leave
// the program waiting for typing nobody can send; 0x04 at a line's start
// ends the input, as a keyboard's Ctrl-D does, and the terminal takes more.
func TestTerminalStdinIsNotClosed(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	start(t, s, StartInput{ExecInput: ExecInput{ProcessID: "term", Argv: []string{"sh", "-c", "wc -c; echo again; cat"}, TTY: &exec.TTYSize{Cols: 80, Rows: 24}}})
	var fe *FieldError
	if _, err := s.WriteStdin(context.Background(), "term", StdinInput{Data: []byte("abc\n"), Close: true}); !errors.As(err, &fe) || fe.Field != "close" {
		t.Fatalf("WriteStdin(close) on a terminal = %v, want a field error on close", err)
	}
	for _, data := range []string{"abc\n\x04", "more\n"} {
		if _, err := s.WriteStdin(context.Background(), "term", StdinInput{Data: []byte(data)}); err != nil {
			t.Fatalf("WriteStdin(%q) = %v", data, err)
		}
	}
	waitFor(t, "the terminal's program to count and read on", func() bool {
		text, _ := output(t, s, "term")
		// The terminal echoes "more" as it is written; cat then prints it.
		return strings.Contains(text, "4\r\nagain\r\nmore\r\n")
	})
	if ok, err := s.Terminate("term"); !ok || err != nil {
		t.Errorf("Terminate = %v, %v", ok, err)
	}
}

// TestFollowerStaysWithItsProcess: a follower (an event stream) holds the
// process it followed, not its id: once the table has forgotten that process
// and a new one has taken its id, the follower still reads the old output to
// its end, gives the old ending, and its Terminate never reaches the new one.
func TestFollowerStaysWithItsProcess(t *testing.T) {
	s := newRealService(t, exec.Options{Retention: 50 * time.Millisecond}, Options{})
	start(t, s, StartInput{ExecInput: ExecInput{ProcessID: "X", Argv: []string{"sh", "-c", "echo old; exit 3"}}})
	f, err := s.Follow("X", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	waitFor(t, "the first X to be forgotten", func() bool {
		_, err := s.Get("X")
		return errors.Is(err, ErrNotFound)
	})
	start(t, s, StartInput{ExecInput: ExecInput{ProcessID: "X", Argv: []string{"sh", "-c", "echo new; sleep 30"}}})
	text := readFollowed(t, f)
	out, err := f.Result(context.Background())
	if text != "old\n" || err != nil || out.Result.ExitCode == nil || *out.Result.ExitCode != 3 {
		t.Errorf("the follower read %q and ended %+v, %v; want the first X's output and exit 3", text, out.Result, err)
	}
	if f.Terminate() {
		t.Errorf("Terminate() of the ended first X = true, want false: it ended long ago")
	}
	if got, _ := s.Get("X"); got.Status != exec.StatusRunning {
		t.Errorf("the new X is %s after the old one's follower terminated, want running", got.Status)
	}
}

// TestStartedCommandsAreFollowedFromTheStart: StartExec and
// StartSessionExec give the follower of the process they started, which
// holds it: however soon it ends and the table forgets it (here at once),
// its output and its ending are read whole, where a follow by its id
// would find no such process.
func TestStartedCommandsAreFollowedFromTheStart(t *testing.T) {
	s := newRealService(t, exec.Options{Retention: time.Nanosecond}, Options{})
	f, err := s.StartExec(context.Background(), ExecInput{Argv: []string{"sh", "-c", "echo hi; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := f.Info().ID
	waitFor(t, "the process to be forgotten", func() bool {
		_, err := s.Get(id)
		return errors.Is(err, ErrNotFound)
	})
	out, err := f.Result(context.Background())
	if text := readFollowed(t, f); text != "hi\n" || err != nil || out.ProcessID != id || out.Result.ExitCode == nil || *out.Result.ExitCode != 3 {
		t.Errorf("StartExec's follower read %q and ended %+v, %v; want hi and exit 3 of %s", text, out, err, id)
	}

	bashSession(t, s, "followed")
	sf, result, err := s.StartSessionExec(context.Background(), "followed", SessionExecInput{Script: "echo there; F=1", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	id = sf.Info().ID
	waitFor(t, "the session's process to be forgotten", func() bool {
		_, err := s.Get(id)
		return errors.Is(err, ErrNotFound)
	})
	end, err := result(context.Background())
	if text := readFollowed(t, sf); text != "there\n" || err != nil || end.ProcessID != id || !end.Session.StateKept {
		t.Errorf("StartSessionExec's follower read %q and ended %+v, %v; want there, its state kept, of %s", text, end, err, id)
	}
}

// readFollowed reads f's output to its end.
func readFollowed(t *testing.T, f Follower) string {
	t.Helper()
	var text string
	for {
		r, err := f.Next(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Chunks {
			text += string(c.Data)
		}
		if r.Closed {
			return text
		}
	}
}
