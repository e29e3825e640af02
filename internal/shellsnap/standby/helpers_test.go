package standby

// Helpers of the standby tests. Real shells run with HOME=t.TempDir(); the
// profile and probe of TestStandbyMatchesReplay are those of shellsnap's
// TestReplayMatchesLoginShell, so that a standby is held to what a replay is.

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// bash is the shell under test.
const bash = "/bin/bash"

// newTestProcs is a manager for a test's own processes, with a sandbox of
// this kernel, shut down when the test ends.
func newTestProcs(t *testing.T) *exec.Manager {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	m := exec.NewManager(exec.Options{Grace: 300 * time.Millisecond, Sandbox: sb})
	t.Cleanup(func() {
		defer sb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	return m
}

// newTestCache is a cache that captures on procs.
func newTestCache(t *testing.T, procs *exec.Manager) *shellsnap.Cache {
	t.Helper()
	c, err := shellsnap.New(shellsnap.Options{Capture: shellsnap.NewCapturer(procs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // its restore files' directory, in the temporary directory
	return c
}

// bashRequest asks for scope's snapshot of bash.
func bashRequest(scope string) *shellsnap.Request {
	return &shellsnap.Request{ScopeID: scope, Shell: shellsnap.Shell{Name: "bash", Path: bash}}
}

// writeFile writes content to path.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loginEnv is the environment of every capture and replay here.
func loginEnv(home string) map[string]string {
	return map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
}

// envPairs turns env into NAME=VALUE strings in a stable order.
func envPairs(env map[string]string) []string {
	pairs := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		pairs = append(pairs, name+"="+env[name])
	}
	return pairs
}

// captureLogin captures the bash login state of home with loginEnv through
// a cache of its own, which keeps its restore files until the test ends.
func captureLogin(t *testing.T, home string) *shellsnap.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newTestCache(t, newTestProcs(t))
	t.Cleanup(c.Close)
	p, err := c.Prepare(ctx, bashRequest("login"), shellsnap.Launch{Argv: []string{bash, "-lc", "true"}, Cwd: home, Env: loginEnv(home)})
	if err != nil || p.Receipt.Outcome != shellsnap.OutcomeUsed {
		t.Fatalf("Prepare() = %+v, %v; want used", p.Receipt, err)
	}
	return p.Snapshot
}

// snapshotOf returns the snapshot of a bash login whose ~/.bash_profile is
// profile, as a cache keeps it.
func snapshotOf(t *testing.T, profile string) *shellsnap.Snapshot {
	t.Helper()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bash_profile"), profile)
	return captureLogin(t, home)
}

// lineDiff returns the lines only in a and only in b, ignoring the ones that
// describe the shell process itself rather than its state.
func lineDiff(a, b string) (onlyA, onlyB []string) {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	for l, n := range count {
		switch {
		case strings.HasPrefix(l, "_=") || strings.HasPrefix(l, "SHLVL="):
			// The process's own bookkeeping: the last command and the depth.
		case n > 0:
			onlyA = append(onlyA, l)
		case n < 0:
			onlyB = append(onlyB, l)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}

// descriptorNumbers turns the glob /proc/PID/fd/* into its descriptor numbers.
func descriptorNumbers(glob string) []string {
	fields := strings.Fields(glob)
	for i, f := range fields {
		fields[i] = filepath.Base(f)
	}
	return fields
}
