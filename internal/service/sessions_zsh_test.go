package service

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// zshSession creates a zsh session in a private home; scope, when not
// empty, starts it from the scope's snapshot of that home's startup files.
func zshSession(t *testing.T, s *Service, id, scope string, files map[string]string) session.Info {
	t.Helper()
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatalf("zsh is required by the session tests (make deps installs it): %v", err)
	}
	home := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in := SessionInput{
		SessionID: id, Shell: shellsnap.Shell{Name: "zsh", Path: zsh}, Cwd: &home,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
	}
	if scope != "" {
		in.ScopeID = &scope
	}
	info, err := s.CreateSession(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestZshSessionFromSnapshot: the first state is the scope's zsh snapshot,
// and what a command changes in it carries; a fork starts from its parent's
// state and runs alongside it.
func TestZshSessionFromSnapshot(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := zshSession(t, s, "zsnap", "zscope", map[string]string{
		".zprofile": "export ZP=profile\npath=(/opt/zbin $path)\n",
		".zshrc":    "greet() { print -r -- hello $1 }\nalias ll='ls -l'\nsetopt extendedglob\ntypeset -A zm=(k v)\ntrap 'echo bye' EXIT\nTRAPUSR1() { print -r -- ${(U):-usr1} }\n",
	}).ID
	out := runIn(t, s, id, `greet a; alias ll; [[ -o extendedglob ]] && echo eg; echo $ZP $zm[k] $path[1]; cd /tmp; ZP=changed; unfunction greet`, time.Minute)
	if got, want := string(out.Result.Stdout.Data), "hello a\nll='ls -l'\neg\nprofile v /opt/zbin\n"; got != want || !out.Session.StateKept {
		t.Fatalf("first command from the snapshot: %q (stateKept %v, stderr %q), want %q", got, out.Session.StateKept, out.Result.Stderr.Data, want)
	}
	if out.Session.Cwd != "/tmp" || len(out.Session.Changes.Functions.Removed) != 1 || len(out.Session.Changes.Variables.Changed) != 1 {
		t.Errorf("its changes: cwd %q, %+v", out.Session.Cwd, out.Session.Changes)
	}
	fork, err := s.ForkSession(id, "zfork")
	if err != nil {
		t.Fatal(err)
	}
	runIn(t, s, id, `ZP=parent; cd /`, time.Minute)
	out = runIn(t, s, fork.ID, `pwd; echo $ZP; whence -w greet; alias ll; kill -USR1 $$`, time.Minute)
	if got, want := string(out.Result.Stdout.Data), "/tmp\nchanged\ngreet: none\nll='ls -l'\nUSR1\n"; got != want {
		t.Errorf("the fork: %q (stderr %q), want %q", got, out.Result.Stderr.Data, want)
	}
}

// TestZshSessionEndings: how each way a zsh command ends leaves the
// session (docs/design/sessions.md#failure and #zsh).
func TestZshSessionEndings(t *testing.T) {
	s := newSessionService(t, session.Options{})
	id := zshSession(t, s, "zend", "", nil).ID
	for _, tt := range []struct {
		script string
		kept   bool
		code   int
		out    string
	}{
		{"L=exit; exit 3", true, 3, ""},
		{"L=errexit; setopt errexit; false; L=no", true, 1, ""},
		{"unsetopt errexit; L=nounset; setopt nounset; : $nosuch; L=no", true, 1, ""},
		{"unsetopt nounset; L=syntax; if then", true, 1, ""},
		{"L=exec; exec true", false, 0, ""},
		{"L=trap; trap 'echo bye' EXIT", true, 0, ""},
		{"L=trapfn; TRAPEXIT() { echo bye2 }", true, 0, ""},
		{"L=subshell; (exit 4); ( L=inner ); echo $(L=cs; echo sub)", true, 0, "sub\n"},
		{"echo $L; whence -w TRAPEXIT; trap - EXIT", true, 0, "subshell\nTRAPEXIT: none\n"},
		{"L=userexit; trap 'echo bye3' EXIT; exit 5", true, 5, "bye3\n"},
		{"L=sleep; sleep 600", false, -1, ""},
	} {
		in := SessionExecInput{Script: tt.script, Timeout: time.Minute}
		if tt.code < 0 {
			in.Timeout = 300 * time.Millisecond
		}
		out, err := s.SessionExec(context.Background(), id, in)
		if err != nil {
			t.Fatal(err)
		}
		code := -1
		if out.Result.ExitCode != nil {
			code = *out.Result.ExitCode
		}
		if out.Session.StateKept != tt.kept || code != tt.code || string(out.Result.Stdout.Data) != tt.out {
			t.Errorf("%q: stateKept %v (%s), exit %d, stdout %q; want %v, %d, %q", tt.script, out.Session.StateKept, out.Session.Reason, code, out.Result.Stdout.Data, tt.kept, tt.code, tt.out)
		}
	}
	out := runIn(t, s, id, `echo $L; trap | grep -c bye`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "userexit\n0\n" {
		t.Errorf("after the endings: %q, want userexit and no trap of the user's listed", got)
	}
}

// TestZshSessionSandbox: a confined zsh session's commands write their end
// state in their own directory and nowhere else, as bash's do
// (TestSessionSandbox).
func TestZshSessionSandbox(t *testing.T) {
	procOpts := withSandbox(t, nil)
	if err := procOpts.Sandbox.Check(sandbox.Policy{ReadOnly: true}); err != nil {
		t.Skipf("this kernel cannot sandbox: %v", err)
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatal(err)
	}
	s := newRealService(t, procOpts, Options{DefaultSandbox: sandbox.Policy{ReadOnly: true}})
	home := t.TempDir()
	if _, err := s.CreateSession(context.Background(), SessionInput{SessionID: "zro", Shell: shellsnap.Shell{Name: "zsh", Path: zsh}, Cwd: &home,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}}); err != nil {
		t.Fatal(err)
	}
	runIn(t, s, "zro", `cd /tmp; export K=1; touch "$HOME/written" 2>/dev/null`, time.Minute)
	out := runIn(t, s, "zro", `echo "$K $PWD"`, time.Minute)
	if got := string(out.Result.Stdout.Data); got != "1 /tmp\n" || !out.Session.StateKept || out.Sandbox.Type != sandbox.TypeLandlock {
		t.Errorf("read-only zsh session: %q, kept %t (%s), sandbox %+v", got, out.Session.StateKept, out.Session.Reason, out.Sandbox)
	}
	if _, err := os.Stat(filepath.Join(home, "written")); err == nil {
		t.Error("a read-only zsh session wrote in its home")
	}
}
