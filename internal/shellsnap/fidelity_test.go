package shellsnap

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/internal/shellsnap/shellsnaptest"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

func TestReplayMatchesLoginShell(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bash_profile"), shellsnaptest.RichProfile)
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "DROP_ME": "x", "LANG": "C"}

	plain := runProbe(t, []string{"/bin/bash", "-lc", shellsnaptest.FidelityProbe}, home, env)

	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	l := Launch{Argv: []string{"/bin/bash", "-lc", shellsnaptest.FidelityProbe}, Cwd: home, Env: cloneMap(env)}
	p, err := c.Prepare(context.Background(), bashRequest("fidelity"), l)
	if err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Fatalf("Prepare() = %+v, %v; want used", p.Receipt, err)
	}
	argv, replayEnv := replayOf(bashRequest("fidelity"), l, p)
	replayed := runProbe(t, argv, home, replayEnv)

	if missing, extra := lineDiff(plain, replayed); len(missing)+len(extra) > 0 {
		t.Errorf("replay differs from bash -lc:\nonly in bash -lc: %q\nonly in the replay: %q", missing, extra)
	}
	for _, want := range []string{"EDITOR=vim", "PATH=" + home + "/bin:", "declare -f greet", "alias ll='ls -l'", "pipefail", "noclobber", "extglob", "0027", "exported", "alias"} {
		if !strings.Contains(replayed, want) {
			t.Errorf("replayed probe lacks %q:\n%s", want, replayed)
		}
	}
	if strings.Contains(replayed, "DROP_ME") {
		t.Errorf("a variable the profile unset reached the replayed command")
	}
}

func runProbe(t *testing.T, argv []string, dir string, env map[string]string) string {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, envpolicy.List(env)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", argv[0], err, out)
	}
	return string(out)
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
