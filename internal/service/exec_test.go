package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// TestExecEnvPolicy runs `env` under several policies and checks the exact
// names the child sees (cmd/server's test of the same name, with the
// server's environment given to the service rather than set on the test
// process).
func TestExecEnvPolicy(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{ServerEnv: []string{
		"SNAPX_PLAIN=plain", "SNAPX_API_KEY=k", "SNAPX_DENIED=d", "SNAPEXEC_TOKEN=server-secret",
		"PATH=/usr/bin:/bin", "HOME=/home/snapx",
	}})
	tests := []struct {
		name   string
		policy *envpolicy.Policy
		env    map[string]string
		want   string // sorted NAME=VALUE lines
	}{
		{"no policy is exactly env", nil, map[string]string{"A": "1"}, "A=1"},
		{"no policy drops never-inherited names", nil, map[string]string{"A": "1", "SNAPEXEC_TOKEN": "x"}, "A=1"},
		{"inherit none", &envpolicy.Policy{Inherit: envpolicy.InheritNone}, map[string]string{"A": "1"}, "A=1"},
		{"inherit all filtered", &envpolicy.Policy{
			Inherit:     envpolicy.InheritAll,
			Exclude:     []string{"snapx_denied"},
			IncludeOnly: []string{"SNAPX_*"},
			Set:         map[string]string{"SNAPX_SET": "s", "SNAPX_PLAIN": "overridden"},
		}, map[string]string{"SNAPX_PLAIN": "request-wins"}, "SNAPX_PLAIN=request-wins\nSNAPX_SET=s"},
		{"inherit core", &envpolicy.Policy{Inherit: envpolicy.InheritCore, IncludeOnly: []string{"PATH", "HOME", "SNAPX_*"}}, nil, "HOME=/home/snapx\nPATH=/usr/bin:/bin"},
		{"server secret never inherited", &envpolicy.Policy{
			Inherit:               envpolicy.InheritAll,
			IgnoreDefaultExcludes: true,
			IncludeOnly:           []string{"SNAPEXEC_*", "SNAPX_*"},
		}, nil, "SNAPX_API_KEY=k\nSNAPX_DENIED=d\nSNAPX_PLAIN=plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := s.Exec(context.Background(), ExecInput{Argv: []string{"/usr/bin/env"}, Env: tt.env, EnvPolicy: tt.policy})
			if err != nil || out.Result.Status != exec.StatusExited {
				t.Fatalf("Exec(env) = %+v, %v", out, err)
			}
			lines := strings.Split(strings.TrimSpace(string(out.Result.Stdout.Data)), "\n")
			sort.Strings(lines)
			if got := strings.Join(lines, "\n"); got != tt.want {
				t.Errorf("env under %+v =\n%s\nwant\n%s", tt.policy, got, tt.want)
			}
		})
	}
}

// bashHome is a home whose login profile is profile.
func bashHome(t *testing.T, file, profile string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, file), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// snapshotExec is `bash -lc script` in home asking for scope's snapshot.
func snapshotExec(home, script, scope, shellName, shellPath string) ExecInput {
	return ExecInput{
		Argv:     []string{shellPath, "-lc", script},
		Cwd:      &home,
		Env:      map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
		Snapshot: &shellsnap.Request{ScopeID: scope, Shell: shellsnap.Shell{Name: shellName, Path: shellPath}},
	}
}

// TestExecWithShellSnapshot: the receipt of each outcome, as a typed field
// of the ending (cmd/server's test of the same name, without HTTP).
func TestExecWithShellSnapshot(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := bashHome(t, ".bash_profile", "export FROM_PROFILE=yes\ngreet() { echo \"hello $1\"; }\n")
	in := snapshotExec(home, "greet world; echo $FROM_PROFILE", "scope-1", "bash", "/bin/bash")
	for i, wantState := range []shellsnap.State{shellsnap.StateOnDemand, shellsnap.StateCacheHit} {
		out, err := s.Exec(context.Background(), in)
		if err != nil {
			t.Fatalf("Exec() = %v", err)
		}
		if out.Snapshot.Outcome != shellsnap.OutcomeUsed || out.Snapshot.State != wantState {
			t.Errorf("run %d receipt = %+v, want used %s", i, out.Snapshot, wantState)
		}
		if got := string(out.Result.Stdout.Data); got != "hello world\nyes\n" {
			t.Errorf("run %d stdout = %q, want the profile's function and export", i, got)
		}
	}

	// A failing profile still runs the command, as the plain login shell.
	bad := bashHome(t, ".bashrc", "exit 7\n")
	out, err := s.Exec(context.Background(), snapshotExec(bad, "echo ran", "scope-2", "bash", "/bin/bash"))
	if err != nil || string(out.Result.Stdout.Data) != "ran\n" || out.Snapshot.Outcome != shellsnap.OutcomeFallback || !strings.Contains(out.Snapshot.Reason, "exit status: 7") {
		t.Errorf("failing profile = %q %+v, %v; want ran, fallback with the reason", out.Result.Stdout.Data, out.Snapshot, err)
	}

	// Not requested, and ineligible.
	if out, _ := s.Exec(context.Background(), ExecInput{Argv: []string{"true"}}); out.Snapshot.Outcome != shellsnap.OutcomeNotRequested {
		t.Errorf("no snapshot request: receipt %+v, want not_requested", out.Snapshot)
	}
	ineligible := snapshotExec(home, "true", "scope-1", "bash", "/bin/bash")
	ineligible.Argv = []string{"/bin/bash", "-c", "true"}
	if out, _ := s.Exec(context.Background(), ineligible); out.Snapshot.Outcome != shellsnap.OutcomeIneligible || out.Snapshot.Reason == "" {
		t.Errorf("-c receipt = %+v, want ineligible with a reason", out.Snapshot)
	}
}

// TestExecShellSnapshotProblems: the snapshot requests refused, whatever
// the argv (cmd/server's test of the same name; the handlers map each error
// to its 422 and field).
func TestExecShellSnapshotProblems(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := t.TempDir()
	// The shell name is checked before the argv shape (issue 14), unlike
	// the reference, which lets this one fall back silently.
	fishWithAnotherArgv := snapshotExec(home, "true", "s", "fish", "/usr/bin/fish")
	fishWithAnotherArgv.Argv = []string{"/usr/bin/fish", "-c", "true"}
	tests := []struct {
		name string
		in   ExecInput
		want error
	}{
		{"empty scope", snapshotExec(home, "true", "", "bash", "/bin/bash"), shellsnap.ErrInvalidScope},
		{"long scope", snapshotExec(home, "true", strings.Repeat("s", 257), "bash", "/bin/bash"), shellsnap.ErrInvalidScope},
		{"fish", snapshotExec(home, "true", "s", "fish", "/bin/bash"), shellsnap.ErrUnsupportedShell},
		{"fish whatever the argv", fishWithAnotherArgv, shellsnap.ErrUnsupportedShell},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if out, err := s.Exec(context.Background(), tt.in); !errors.Is(err, tt.want) {
				t.Errorf("Exec() = %+v, %v; want %v", out, err, tt.want)
			}
		})
	}
	if n := len(s.List()); n != 0 {
		t.Errorf("%d processes after the refusals, want none", n)
	}
}

// TestProcessShowsTheClientsArgv: a process shows the argv its client gave,
// not the wrapper that replays the snapshot, and its receipt, through a
// fresh replay and through a standby shell (Release hands the process over:
// its record follows it, standby: true).
func TestProcessShowsTheClientsArgv(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{Standby: standby.Options{Max: 1}})
	home := bashHome(t, ".bash_profile", "greet() { echo \"hello $1\"; }\n")
	in := snapshotExec(home, "greet world", "argv", "bash", "/bin/bash")
	run := func(i int) ExecOutput {
		t.Helper()
		out, err := s.Exec(context.Background(), in)
		if err != nil || string(out.Result.Stdout.Data) != "hello world\n" || out.Snapshot.Outcome != shellsnap.OutcomeUsed {
			t.Fatalf("run %d = %q %+v, %v; want hello world, used", i, out.Result.Stdout.Data, out.Snapshot, err)
		}
		p, err := s.Get(out.ProcessID)
		if err != nil || !slices.Equal(p.Argv, in.Argv) || !reflect.DeepEqual(p.Snapshot, out.Snapshot) {
			t.Errorf("run %d shows argv %q receipt %+v (%v), want the client's %q and the ending's %+v", i, p.Argv, p.Snapshot, err, in.Argv, out.Snapshot)
		}
		if ran, _ := s.procs.Get(out.ProcessID); slices.Equal(ran.Info().Argv, in.Argv) {
			t.Errorf("run %d ran argv %q: want the replay's wrapper, for this test to mean something", i, ran.Info().Argv)
		}
		return out
	}
	// The launch repeats with its second run, which leaves a standby for
	// the third.
	run(1)
	if out := run(2); out.Snapshot.Standby {
		t.Errorf("run 2 ran in a standby shell, want a fresh replay")
	}
	waitFor(t, "the launch's standby shell", func() bool { return s.Stats().Standby.Idle == 1 })
	if out := run(3); !out.Snapshot.Standby {
		t.Errorf("run 3 receipt = %+v, want standby: a standby waited for its launch", out.Snapshot)
	}
}

// TestExecDefaults: a command without a timeout gets Limits.DefaultTimeout,
// a background process none (the rule the handlers applied before).
func TestExecDefaults(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{Limits: Limits{DefaultTimeout: 200 * time.Millisecond}})
	out, err := s.Exec(context.Background(), ExecInput{Argv: []string{"sleep", "30"}})
	if err != nil || out.Result.Status != exec.StatusTimedOut {
		t.Errorf("Exec(sleep 30) with a default timeout of 200ms = %+v, %v; want timed_out", out.Result, err)
	}
	f, err := s.StartExec(context.Background(), ExecInput{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if out, err := f.Result(context.Background()); err != nil || out.Result.Status != exec.StatusTimedOut {
		t.Errorf("StartExec(sleep 30) ended %+v, %v; want timed_out by the default", out.Result, err)
	}
	bg := start(t, s, StartInput{ExecInput: ExecInput{Argv: []string{"sleep", "30"}}})
	time.Sleep(400 * time.Millisecond) // twice the default: still running
	if got, _ := s.Get(bg.ID); got.Status != exec.StatusRunning {
		t.Errorf("a background process without a timeout is %s after twice the default, want running", got.Status)
	}
}
