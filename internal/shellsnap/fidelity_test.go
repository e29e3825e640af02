package shellsnap

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

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

// TestReplayKeepsValuesAttributesWouldChange: a profile that gives a
// variable an attribute that changes what is assigned to it (-i evaluates,
// -l, -u and -c change case) after its value keeps the value as it was;
// the replay must too, exported, in arrays and read-only alike, and never
// evaluate it: an array index in a value can run a command substitution.
func TestReplayKeepsValuesAttributesWouldChange(t *testing.T) {
	home := t.TempDir()
	marker := filepath.Join(home, "evaluated")
	profile := `X=abc; declare -i X
Y="1+2"; declare -i Y
L=AbC; declare -l L
U=AbC; declare -u U
C=abc; declare -c C
a=(x y); declare -i a
E=abc; export E; declare -i E
R=xyz; declare -i R; readonly R
P='a[$(echo ran >>` + marker + `)]'; declare -i P
`
	writeFile(t, filepath.Join(home, ".bash_profile"), profile)
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C"}
	const probe = `declare -p X Y L U C a E R P; printenv E`
	plain := runProbe(t, []string{"/bin/bash", "-lc", probe}, home, env)

	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	l := Launch{Argv: []string{"/bin/bash", "-lc", probe}, Cwd: home, Env: cloneMap(env)}
	p, err := c.Prepare(context.Background(), bashRequest("attributes"), l)
	if err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Fatalf("Prepare() = %+v, %v; want used", p.Receipt, err)
	}
	argv, replayEnv := replayOf(bashRequest("attributes"), l, p)
	if replayed := runProbe(t, argv, home, replayEnv); replayed != plain {
		t.Errorf("replay differs from bash -lc:\nbash -lc:\n%s\nreplay:\n%s", plain, replayed)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a value's command substitution ran (%s exists); the login shell never runs it", marker)
	}
}

// TestReplayMatchesLoginShellOddProfiles: startup files of the strangest
// kinds, each with a probe of what it changed, cold-captured and replayed;
// what the probe prints (stdout, stderr and the exit status) must be the
// real login shell's, byte for byte.
func TestReplayMatchesLoginShellOddProfiles(t *testing.T) {
	tests := []struct {
		name, shell string
		files       map[string]string
		env         map[string]string // the request's, beside loginEnv's
		probe       string
		unrestored  []Piece // what the receipt names (partial); none: used
	}{
		{
			// The dump prints with printf and reads with mapfile: were they
			// used disabled, the capture's shell would hash /usr/bin/printf,
			// and the replay restore that hash.
			name: "builtins disabled", shell: "bash",
			files: map[string]string{".bash_profile": "enable -n printf mapfile declare type\nhelper() { echo helper-ok; }\n"},
			probe: "helper; hash -l; enable -n",
		},
		{
			// The descriptor is the profile's, which no replay has (a
			// known gap, which the receipt names): the variable is set all
			// the same, without bash's warning on every command's stderr.
			name: "BASH_XTRACEFD on a descriptor of the profile", shell: "bash",
			files:      map[string]string{".bash_profile": "exec 7>>~/trace.log\nBASH_XTRACEFD=7\nhelper() { echo helper-ok; }\n"},
			probe:      "helper; echo \"[$BASH_XTRACEFD]\"",
			unrestored: []Piece{{Kind: "descriptor", Name: "7"}},
		},
		{
			// The dump reads the functions' attributes with read.
			name: "read disabled", shell: "bash",
			files: map[string]string{".bash_profile": "f() { :; }; declare -ft f\ng() { :; }; declare -fx g\nenable -n read type\n"},
			probe: "declare -F; enable -n; printenv BASH_FUNC_g%%",
		},
		{
			// The options step sets them, with a value the dump emptied
			// since the environment holds it.
			name: "POSIXLY_CORRECT and BASH_COMPAT exported", shell: "bash",
			files: map[string]string{".bash_profile": "export POSIXLY_CORRECT=1 BASH_COMPAT=5.1\n"},
			probe: "echo \"[$POSIXLY_CORRECT] [$BASH_COMPAT]\"; printenv POSIXLY_CORRECT BASH_COMPAT; shopt -o posix",
		},
		{
			// The capture's -c string is parsed under the options the
			// startup files left: sh's has no {name} redirection.
			name: "emulate sh at the end of .zprofile", shell: "zsh",
			files: map[string]string{".zprofile": "helper() { echo helper-ok; }\nemulate sh\n"},
			probe: "helper; [[ -o shwordsplit ]] && echo sh-options",
		},
		{
			name: "ignore_braces at the end of .zprofile", shell: "zsh",
			files: map[string]string{".zprofile": "helper() { echo helper-ok; }\nsetopt ignore_braces\n"},
			probe: "helper; [[ -o ignorebraces ]] && echo braces-ignored",
		},
		{
			// The dump runs them through \builtin, which a disabled one
			// does not reach.
			name: "builtins disabled", shell: "zsh",
			files: map[string]string{".zprofile": "helper() { echo helper-ok; }\ndisable print emulate typeset trap unset\n"},
			probe: "helper; echo ${(ok)dis_builtins}",
		},
		{
			name: "BASH_COMPAT of the request", shell: "bash",
			files: map[string]string{".bash_profile": "helper() { echo helper-ok; }\n"},
			env:   map[string]string{"BASH_COMPAT": "5.1"},
			probe: "helper; echo \"[$BASH_COMPAT]\"; printenv BASH_COMPAT",
		},
	}
	for _, tt := range tests {
		t.Run(tt.shell+"/"+tt.name, func(t *testing.T) {
			sh := shellByName(t, tt.shell)
			home := t.TempDir()
			writeHomeFiles(t, home, tt.files)
			env := loginEnv(home)
			maps.Copy(env, tt.env)
			login := runBoth(t, []string{sh.path, "-lc", tt.probe}, home, env)
			c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
			t.Cleanup(c.Close)
			req := &Request{ScopeID: "odd", Shell: Shell{Name: sh.name, Path: sh.path}}
			l := Launch{Argv: []string{sh.path, "-lc", tt.probe}, Cwd: home, Env: cloneMap(env)}
			p, err := c.Prepare(context.Background(), req, l)
			want := OutcomeUsed
			if tt.unrestored != nil {
				want = OutcomePartial
			}
			if err != nil || p.Receipt.Outcome != want || !slices.Equal(p.Receipt.Unrestored, tt.unrestored) {
				t.Fatalf("Prepare(%s) = %+v, %v; want %s %v", tt.name, p.Receipt, err, want, tt.unrestored)
			}
			argv, env := replayOf(req, l, p)
			if replayed := runBoth(t, argv, home, env); replayed != login {
				t.Errorf("replay differs from %s -lc:\nlogin:\n%s\nreplay:\n%s", sh.name, login, replayed)
			}
		})
	}
}

// runBoth runs argv in dir with env and returns its stdout, then its stderr
// and its exit status, whatever they are.
func runBoth(t *testing.T, argv []string, dir string, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, envpolicy.List(env)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); ctx.Err() != nil || cmd.ProcessState == nil {
		t.Fatalf("%q did not end: %v", argv, err)
	}
	return stdout.String() + "--- stderr\n" + stderr.String() + fmt.Sprintf("--- exit %d\n", cmd.ProcessState.ExitCode())
}
