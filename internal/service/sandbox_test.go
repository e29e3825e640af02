package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// withSandbox is exec options with a sandbox of this kernel (or of probe's),
// closed when the test ends.
func withSandbox(t *testing.T, probe func() sandbox.Support) exec.Options {
	t.Helper()
	sb := sandbox.New(sandbox.Options{Probe: probe})
	t.Cleanup(func() { _ = sb.Close() })
	return exec.Options{Sandbox: sb}
}

// TestSandboxUnavailableRunsNothing: a sandbox the kernel cannot enforce
// refuses the command, its snapshot capture and a prewarm before anything
// runs: the profile's sentinel and the command's are never made.
func TestSandboxUnavailableRunsNothing(t *testing.T) {
	s := newRealService(t, withSandbox(t, func() sandbox.Support { return sandbox.Support{} }), Options{})
	home := t.TempDir()
	profileRan, commandRan := filepath.Join(home, "profile-ran"), filepath.Join(home, "command-ran")
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("touch "+profileRan+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := snapshotExec(home, "touch "+commandRan, "unavailable", "bash", "/bin/bash")
	in.Sandbox = &sandbox.Policy{WritableRoots: []string{home}}
	if _, err := s.Exec(context.Background(), in); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("Exec = %v, want sandbox.ErrUnavailable", err)
	}
	if _, err := s.Start(context.Background(), StartInput{ExecInput: in}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("Start = %v, want sandbox.ErrUnavailable", err)
	}
	if _, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "unavailable", Shell: in.Snapshot.Shell, Cwd: &home, Env: in.Env, Sandbox: in.Sandbox, Wait: true}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("Prewarm = %v, want sandbox.ErrUnavailable", err)
	}
	for _, f := range []string{profileRan, commandRan} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): something ran for a refused sandbox", filepath.Base(f), err)
		}
	}
	if n := len(s.Snapshots()); n != 0 {
		t.Errorf("%d cache entries after refusals, want none", n)
	}
}

// TestDefaultSandbox: a request without a sandbox runs in the server's
// default, its capture too; a request's own sandbox replaces it; a default
// the manager cannot enforce stops New.
func TestDefaultSandbox(t *testing.T) {
	procOpts := withSandbox(t, nil)
	if err := procOpts.Sandbox.Check(sandbox.Policy{ReadOnly: true}); err != nil {
		t.Skipf("this kernel cannot sandbox: %v", err)
	}
	home, outside := t.TempDir(), t.TempDir()
	s := newRealService(t, procOpts, Options{DefaultSandbox: sandbox.Policy{WritableRoots: []string{home}}})
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("touch "+outside+"/profile 2>/dev/null\ntrue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := snapshotExec(home, "touch "+outside+"/default", "default", "bash", "/bin/bash")
	out, err := s.Exec(context.Background(), in)
	if err != nil || out.Snapshot.Outcome != shellsnap.OutcomeUsed {
		t.Fatalf("Exec = %+v, %v; want it run with its snapshot", out.Snapshot, err)
	}
	if out.Sandbox.Type != sandbox.TypeLandlock {
		t.Errorf("Exec's sandbox = %+v, want landlock (the default)", out.Sandbox)
	}
	for _, f := range []string{"profile", "default"} {
		if _, err := os.Stat(filepath.Join(outside, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("outside/%s exists (%v): the default sandbox was not applied", f, err)
		}
	}
	in.Argv[2] = "touch " + outside + "/own"
	in.Sandbox = &sandbox.Policy{WritableRoots: []string{outside}}
	if out, err := s.Exec(context.Background(), in); err != nil || out.Sandbox.Type != sandbox.TypeLandlock {
		t.Fatalf("Exec with its own sandbox = %+v, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "own")); err != nil {
		t.Errorf("a request's own sandbox did not replace the default: %v", err)
	}

	procs := exec.NewManager(exec.Options{})
	cache, _ := shellsnap.New(shellsnap.Options{Capture: shellsnap.NewCapturer(procs)})
	if _, err := New(Options{Procs: procs, Snapshots: cache, DefaultSandbox: sandbox.Policy{ReadOnly: true}}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("New with a default no manager sandbox enforces = %v, want sandbox.ErrUnavailable", err)
	}
}

// TestSessionSandbox: every command of a session runs in its sandbox, the
// capture of its first state too, and so does every command of a fork; the
// state carries all the same (the shell writes it in a directory of its
// own). A read-only default confines a session that asks for nothing.
func TestSessionSandbox(t *testing.T) {
	procOpts := withSandbox(t, nil)
	if err := procOpts.Sandbox.Check(sandbox.Policy{ReadOnly: true}); err != nil {
		t.Skipf("this kernel cannot sandbox: %v", err)
	}
	s := newRealService(t, procOpts, Options{DefaultSandbox: sandbox.Policy{ReadOnly: true}})
	home, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("touch "+outside+"/profile 2>/dev/null\nPROFILE_RAN=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bash := shellsnap.Shell{Name: "bash", Path: "/bin/bash"}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	policy := sandbox.Policy{WritableRoots: []string{home}}
	info, err := s.CreateSession(context.Background(), SessionInput{SessionID: "confined", Shell: bash, Cwd: &home, Env: env, ScopeID: ptr("confined"), Sandbox: &policy})
	if err != nil {
		t.Fatalf("CreateSession with a sandbox: %v", err)
	}
	if !reflect.DeepEqual(info.Sandbox, policy) {
		t.Errorf("session's sandbox = %+v, want %+v", info.Sandbox, policy)
	}
	steps := []struct{ id, script, out string }{
		{"confined", `touch "$HOME/inside"; export K=1; cd /tmp; touch ` + outside + "/first 2>/dev/null; echo $PROFILE_RAN", "1\n"},
		{"confined", `echo x >` + outside + `/second 2>/dev/null; mkdir ` + outside + `/dir 2>/dev/null; echo "$K $PWD"`, "1 /tmp\n"},
		{"fork", `K=2; (touch ` + outside + `/forked) 2>/dev/null; echo "$K $PWD"`, "2 /tmp\n"},
		{"fork", `echo $K`, "2\n"},
	}
	for i, st := range steps {
		if i == 2 {
			fork, err := s.ForkSession("confined", "fork")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fork.Sandbox, policy) {
				t.Errorf("fork's sandbox = %+v, want %+v", fork.Sandbox, policy)
			}
		}
		out := runIn(t, s, st.id, st.script, time.Minute)
		if got := string(out.Result.Stdout.Data); got != st.out || !out.Session.StateKept || out.Sandbox.Type != sandbox.TypeLandlock {
			t.Errorf("%s %q: stdout %q, state kept %t (%s), sandbox %+v; want %q, kept, landlock", st.id, st.script, got, out.Session.StateKept, out.Session.Reason, out.Sandbox, st.out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "inside")); err != nil {
		t.Errorf("a session command could not write inside its root: %v", err)
	}
	if names, _ := os.ReadDir(outside); len(names) > 0 {
		t.Errorf("a confined session wrote outside its root: %v", names)
	}

	// No sandbox asked: the server's read-only default.
	info, err = s.CreateSession(context.Background(), SessionInput{SessionID: "default", Shell: bash, Cwd: &home, Env: env})
	if err != nil || !info.Sandbox.ReadOnly {
		t.Fatalf("CreateSession without a sandbox = %+v, %v; want the read-only default", info.Sandbox, err)
	}
	runIn(t, s, "default", `cd /tmp; touch "$HOME/default" 2>/dev/null`, time.Minute)
	if out := runIn(t, s, "default", "pwd", time.Minute); string(out.Result.Stdout.Data) != "/tmp\n" {
		t.Errorf("read-only session: pwd = %q, want /tmp", out.Result.Stdout.Data)
	}
	if _, err := os.Stat(filepath.Join(home, "default")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only session wrote its HOME (%v)", err)
	}
}

// TestSessionSandboxUnavailable: a session whose sandbox the kernel cannot
// enforce is refused before anything runs, its profile included.
func TestSessionSandboxUnavailable(t *testing.T) {
	s := newRealService(t, withSandbox(t, func() sandbox.Support { return sandbox.Support{} }), Options{})
	home := t.TempDir()
	ran := filepath.Join(home, "profile-ran")
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("touch "+ran+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateSession(context.Background(), SessionInput{
		SessionID: "refused", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}, ScopeID: ptr("refused"),
		Sandbox: &sandbox.Policy{WritableRoots: []string{home}},
	})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("CreateSession = %v, want sandbox.ErrUnavailable", err)
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the profile ran for a refused session (%v)", err)
	}
	if n := len(s.Sessions()); n != 0 {
		t.Errorf("%d sessions after the refusal, want none", n)
	}
}
