package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
