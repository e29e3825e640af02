package service

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

var bash = shellsnap.Shell{Name: "bash", Path: "/bin/bash"}

// TestPrewarmWithoutWait: a prewarm that does not wait answers the entry
// pending; a command meanwhile uses the prewarm's capture (prewarm_pending),
// and the next one finds it ready (cmd/server's test of the same name; the
// handlers answer such a prewarm 202).
func TestPrewarmWithoutWait(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := bashHome(t, ".bashrc", "sleep 0.3\n")
	e, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "nowait", Shell: bash, Cwd: &home,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}})
	if err != nil || e.State != shellsnap.EntryPending {
		t.Errorf("Prewarm(wait false) = %+v, %v; want the entry pending", e, err)
	}
	in := snapshotExec(home, "true", "nowait", "bash", "/bin/bash")
	if out, _ := s.Exec(context.Background(), in); out.Snapshot.State != shellsnap.StatePrewarmPending || out.Snapshot.Outcome != shellsnap.OutcomeUsed {
		t.Errorf("command during the prewarm = %+v, want prewarm_pending used", out.Snapshot)
	}
	if out, _ := s.Exec(context.Background(), in); out.Snapshot.State != shellsnap.StatePrewarmReady {
		t.Errorf("command after the prewarm = %+v, want prewarm_ready", out.Snapshot)
	}
}

// TestPrewarmChecksTheCwd: a prewarm's cwd that is not a directory is the
// request's fault (exec.ErrCwdNotFound, 422), found before any capture runs,
// not a capture failure (502).
func TestPrewarmChecksTheCwd(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	missing := t.TempDir() + "/nope"
	for _, wait := range []bool{true, false} {
		_, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "cwd", Shell: bash, Cwd: &missing, Wait: wait})
		if !errors.Is(err, exec.ErrCwdNotFound) {
			t.Errorf("Prewarm(wait %v) in a missing cwd = %v, want ErrCwdNotFound", wait, err)
		}
	}
	if e := s.Snapshots(); len(e) != 0 {
		t.Errorf("entries after the refusals = %+v, want none", e)
	}
	relative := "home"
	if _, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "cwd", Shell: bash, Cwd: &relative}); fieldOf(err) != "cwd" {
		t.Errorf("Prewarm() in a relative cwd = %v, want a field error on cwd", err)
	}
}

// TestLoginTerminalHasItsOwnSnapshot: a login shell on a terminal uses the
// scope's login terminal snapshot, an interactive shell's, which the
// registry shows as such; a `bash -lc` command of the same scope has the
// snapshot of its own, as before, without what the profile sets for an
// interactive shell only.
func TestLoginTerminalHasItsOwnSnapshot(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := bashHome(t, ".bash_profile", "if [[ $- == *i* ]]; then alias term='echo in a terminal'; fi\nPS1='snap> '\n")
	in := snapshotExec(home, "alias", "terminals", "bash", "/bin/bash")
	terminal := in
	terminal.Argv, terminal.TTY = []string{"/bin/bash", "-l"}, &exec.TTYSize{Cols: 80, Rows: 24}
	p := start(t, s, StartInput{ExecInput: terminal})
	if p.Snapshot.Outcome != shellsnap.OutcomeUsed || p.Snapshot.State != shellsnap.StateOnDemand {
		t.Errorf("the terminal's receipt = %+v, want used on_demand", p.Snapshot)
	}
	out, err := s.Exec(context.Background(), in)
	if err != nil || out.Snapshot.Outcome != shellsnap.OutcomeUsed || out.Snapshot.State != shellsnap.StateOnDemand {
		t.Fatalf("the command's receipt = %+v, %v; want used on_demand: a snapshot of its own", out.Snapshot, err)
	}
	if got := string(out.Result.Stdout.Data); got != "" {
		t.Errorf("the command's aliases = %q, want none: its login shell is not interactive", got)
	}
	entries, err := s.ScopeSnapshots("terminals")
	if err != nil || len(entries) != 2 || !entries[0].Terminal || entries[0].AliasCount != 1 || entries[1].Terminal || entries[1].AliasCount != 0 {
		t.Errorf("ScopeSnapshots() = %+v, %v; want the terminal's (Terminal, 1 alias), then the command's (no alias)", entries, err)
	}
	if _, err := s.Terminate(p.ID); err != nil {
		t.Errorf("Terminate(terminal) = %v", err)
	}
}

// TestPrewarmALoginTerminal: a prewarm with Terminal captures the login
// terminal's snapshot, which the scope's next login terminal opens from
// (prewarm_ready), and no command's; sh has no login terminal snapshot.
func TestPrewarmALoginTerminal(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := bashHome(t, ".bash_profile", "if [[ $- == *i* ]]; then alias term='echo in a terminal'; fi\n")
	bash := shellsnap.Shell{Name: "bash", Path: "/bin/bash"}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	e, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "warm-terminal", Shell: bash, Cwd: &home, Env: env, Terminal: true, Wait: true})
	if err != nil || !e.Terminal || e.State != shellsnap.EntryReady || e.AliasCount != 1 {
		t.Fatalf("Prewarm(terminal) = %+v, %v; want a ready terminal entry with its alias", e, err)
	}
	terminal := snapshotExec(home, "", "warm-terminal", "bash", "/bin/bash")
	terminal.Argv, terminal.TTY = []string{"/bin/bash", "-l"}, &exec.TTYSize{Cols: 80, Rows: 24}
	p := start(t, s, StartInput{ExecInput: terminal})
	if p.Snapshot.Outcome != shellsnap.OutcomeUsed || p.Snapshot.State != shellsnap.StatePrewarmReady {
		t.Errorf("the terminal's receipt = %+v, want used prewarm_ready", p.Snapshot)
	}
	if _, err := s.Terminate(p.ID); err != nil {
		t.Errorf("Terminate(terminal) = %v", err)
	}
	if entries, err := s.ScopeSnapshots("warm-terminal"); err != nil || len(entries) != 1 {
		t.Errorf("ScopeSnapshots() = %+v, %v; want the terminal's alone", entries, err)
	}
	sh := shellsnap.Shell{Name: "sh", Path: "/bin/sh"}
	if _, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "sh-terminal", Shell: sh, Terminal: true}); fieldOf(err) != "terminal" {
		t.Errorf("Prewarm(sh, terminal) = %v, want an error on terminal", err)
	}
	if entries, err := s.ScopeSnapshots("sh-terminal"); err == nil && len(entries) != 0 {
		t.Errorf("a refused prewarm left entries %+v", entries)
	}
}

// TestLoginTerminalOpensWhenItsCaptureFails: a profile that ends its shell
// off a terminal (`[[ -t 0 ]] || exit`) fails the login terminal's
// capture, which runs on none; the terminal opens all the same, as the
// plain login shell it asked for (fallback), and reaches its prompt.
func TestLoginTerminalOpensWhenItsCaptureFails(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := bashHome(t, ".bash_profile", "[[ -t 0 ]] || exit 3\nPS1='snap> '\n")
	terminal := snapshotExec(home, "", "no-tty", "bash", "/bin/bash")
	terminal.Argv, terminal.TTY = []string{"/bin/bash", "-l"}, &exec.TTYSize{Cols: 80, Rows: 24}
	p := start(t, s, StartInput{ExecInput: terminal})
	if p.Snapshot.Outcome != shellsnap.OutcomeFallback {
		t.Errorf("the terminal's receipt = %+v, want fallback", p.Snapshot)
	}
	var shown strings.Builder
	for after, deadline := int64(0), time.Now().Add(10*time.Second); !strings.Contains(shown.String(), "snap> ") && time.Now().Before(deadline); {
		r, err := s.Read(context.Background(), p.ID, ReadInput{AfterSeq: after, Wait: time.Second})
		if err != nil {
			t.Fatalf("Read(terminal) = %v", err)
		}
		for _, c := range r.Chunks {
			shown.Write(c.Data)
		}
		after = r.NextSeq - 1
	}
	if !strings.Contains(shown.String(), "snap> ") {
		t.Errorf("the terminal showed %q, want its profile's prompt", shown.String())
	}
	if _, err := s.Terminate(p.ID); err != nil {
		t.Errorf("Terminate(terminal) = %v", err)
	}
}

// TestShellThatCannotStart: a prewarm or a session whose shell.path cannot be
// started (none there, not executable) is the request's fault, as /exec's
// missing program is: a *ProgramError on shell.path that is exec.ErrSpawn
// (422 spawn_failed), not a capture failure (502), and no entry is made.
func TestShellThatCannotStart(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	notExecutable := t.TempDir() + "/bash"
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{t.TempDir() + "/nope", notExecutable, "no-such-shell"} {
		sh := shellsnap.Shell{Name: "bash", Path: path}
		for _, wait := range []bool{true, false} {
			_, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "shell", Shell: sh, Wait: wait, Env: map[string]string{"PATH": "/nonexistent"}})
			var pe *ProgramError
			if !errors.As(err, &pe) || pe.Field != "shell.path" || !errors.Is(err, exec.ErrSpawn) {
				t.Errorf("Prewarm(%s, wait %v) = %v, want a ProgramError on shell.path that is ErrSpawn", path, wait, err)
			}
		}
		_, err := s.CreateSession(context.Background(), SessionInput{Shell: sh, Env: map[string]string{"PATH": "/nonexistent"}})
		var pe *ProgramError
		if !errors.As(err, &pe) || pe.Field != "shell.path" || !errors.Is(err, exec.ErrSpawn) {
			t.Errorf("CreateSession(%s) = %v, want a ProgramError on shell.path that is ErrSpawn", path, err)
		}
	}
	if e := s.Snapshots(); len(e) != 0 {
		t.Errorf("entries after the refusals = %+v, want none", e)
	}
}
