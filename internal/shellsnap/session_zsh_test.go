package shellsnap

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// zshSessionRun runs one zsh session command from state, as sessionRun
// runs a bash one.
func zshSessionRun(t *testing.T, f *SessionFiles, home string, state *SessionState, script string) (stdout, stderr string, code int, next *SessionState, err error) {
	t.Helper()
	return shellSessionRun(t, f, Shell{Name: "zsh", Path: zshPath(t)}, home, state, script)
}

// zshPath is zsh's path; the tests fail without it (shellsUnderTest).
func zshPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatalf("zsh is required by the session tests: %v", err)
	}
	return path
}

func TestZshSessionCarriesState(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	var st *SessionState
	steps := []struct {
		script, out string
		code        int
	}{
		{"cd /tmp && export FOO=bar; x=1; typeset -a arr=(a 'b c'); typeset -A m=(k v); typeset -i n=7; f() { echo f$1; }; alias ll='ls -l'; alias -g G='| wc -l'; alias -s txt=cat; setopt noclobber extendedglob; umask 027; trap 'echo usr1' USR1; TRAPUSR2() { echo usr2 }", "", 0},
		{`pwd; echo FOO=$FOO x=$x "${arr[2]}" $m[k] $n; f 1; alias -L; alias -sL; [[ -o noclobber && -o extendedglob ]] && echo opts; umask; trap | grep -v __snapexec_`,
			"/tmp\nFOO=bar x=1 b c v 7\nf1\nalias -g G='| wc -l'\nalias ll='ls -l'\nalias run-help=man\nalias which-command=whence\nalias -s txt=cat\nopts\n027\ntrap -- 'echo usr1' USR1\nTRAPUSR2 () {\n\techo usr2\n}\n", 0},
		{"unset FOO; unfunction f; unalias ll; cd /; exit 3", "", 3},
		{`pwd; echo "FOO=${FOO-unset}"; whence -w f; alias ll`, "/\nFOO=unset\nf: none\n", 1},
		{"setopt errexit; y=2; false; y=3", "", 1},
		{`echo y=$y; [[ -o errexit ]] && echo errexit`, "y=2\nerrexit\n", 0},
		{"unsetopt errexit; setopt nounset; z=1; echo $nosuch; z=2", "", 1},
		{`echo z=$z; unsetopt nounset`, "z=1\n", 0},
		{`trap 'echo bye' EXIT; w=1`, "", 0},
		{`echo w=$w; trap | grep -c bye`, "w=1\n0\n", 1},
		{`set -- a 'b c'; pushd /usr >/dev/null; pushd /tmp >/dev/null`, "", 0},
		{`echo "$# $2"; dirs -p; cd -; echo $OLDPWD`, "2 b c\n/tmp\n/usr\n/\n/tmp\n", 0},
		{`if then`, "", 1},
		{`pwd; (exit 4); echo sub`, "/usr\nsub\n", 0},
		{`cd /; echo a \`, "a \n", 0},
		{`pwd; setopt nounset ksharrays shwordsplit noclobber; unset zshexit_functions; Q=1`, "/\n", 0},
		{`echo $Q; [[ -o nounset && -o ksharrays ]] && echo opts`, "1\nopts\n", 0},
	}
	for i, s := range steps {
		out, errOut, code, next, err := zshSessionRun(t, f, home, st, s.script)
		if err != nil {
			t.Fatalf("step %d %q: Finish: %v (stderr %q)", i, s.script, err, errOut)
		}
		if out != s.out || code != s.code {
			t.Errorf("step %d %q: got %q code %d (stderr %q), want %q code %d", i, s.script, out, code, errOut, s.out, s.code)
		}
		if i == 0 {
			ch := next.Changes(st)
			for _, name := range []string{"FOO", "x", "arr", "m", "n"} {
				if !slices.Contains(ch.Variables.Added, name) {
					t.Errorf("changes %+v lack %s", ch.Variables, name)
				}
			}
			if !slices.Contains(ch.Functions.Added, "f") || !slices.Contains(ch.Aliases.Added, "G") {
				t.Errorf("changes %+v lack f or G", ch)
			}
		}
		st = next
	}
	ch := st.Changes(st)
	if len(ch.Variables.Added)+len(ch.Variables.Changed)+len(ch.Variables.Removed) != 0 {
		t.Errorf("a state against itself changes %+v", ch.Variables)
	}
}

// TestZshSessionNamesStable: a command that changes nothing changes no
// name (zsh's volatile parameters are not names of the state).
func TestZshSessionNamesStable(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	_, _, _, s1, err := zshSessionRun(t, f, home, nil, `:`)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, s2, err := zshSessionRun(t, f, home, s1, `echo $RANDOM $SECONDS >/dev/null; sleep 1; :`)
	if err != nil {
		t.Fatal(err)
	}
	if ch := s2.Changes(s1); len(ch.Variables.Added)+len(ch.Variables.Changed)+len(ch.Variables.Removed) != 0 {
		t.Errorf("a command that changed nothing changed %+v", ch.Variables)
	}
	if strings.Contains(strings.Join(s2.Changes(nil).Functions.Added, " "), "__snapexec") {
		t.Errorf("the session's hook is one of the state's functions")
	}
}

// TestZshSessionCarriesAttributes: read-only, tied, float, exported
// integer and unset parameters, named directories and the positional
// parameters carry as one zsh carries them.
func TestZshSessionCarriesAttributes(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	_, errOut, _, st, err := zshSessionRun(t, f, home, nil, `typeset -r R=1; typeset -T TL tl=(a b); typeset -F 3 FL=1.5; typeset -xi XI=4; unset HOME; hash -d proj=/tmp; typeset -U path; path+=(/usr/bin); set -- one 'two three'`)
	if err != nil {
		t.Fatalf("Finish: %v (stderr %q)", err, errOut)
	}
	out, errOut, _, _, err := zshSessionRun(t, f, home, st, `typeset -p R TL tl FL XI; echo ${HOME-unset} ~proj $#path $# $2; R=2 2>/dev/null; echo not reached`)
	want := "typeset -r R=1\ntypeset -T TL tl=( a b )\ntypeset -aT TL tl=( a b )\ntypeset -F FL=1.500\nexport -i XI=4\nunset /tmp 2 2 two three\n"
	if err != nil || out != want {
		t.Errorf("after the attributes' command: %q (%v, stderr %q), want %q", out, err, errOut, want)
	}
}

// TestZshSessionCarriesExportsWithoutValue: a parameter exported with no
// value (export X, or created under allexport) is in no environment, yet
// exported and set to the empty string; it carries so (found by sequence 270
// of the differential test).
func TestZshSessionCarriesExportsWithoutValue(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	_, errOut, _, st, err := zshSessionRun(t, f, home, nil, `export NOVAL; setopt allexport; typeset +x AE; unsetopt allexport; export HOME`)
	if err != nil {
		t.Fatalf("Finish: %v (stderr %q)", err, errOut)
	}
	out, errOut, _, _, err := zshSessionRun(t, f, home, st, `typeset -p NOVAL AE HOME; env | grep -c -e ^NOVAL= -e ^AE=`)
	want := "export NOVAL=''\nexport AE=''\nexport HOME=" + home + "\n0\n"
	if err != nil || out != want {
		t.Errorf("after the exports: %q (%v, stderr %q), want %q", out, err, errOut, want)
	}
}

// TestZshSessionDebugTrapAndVerbose: a DEBUG trap runs before the script's
// commands and the session's end line (docs/design/sessions.md#zsh), never
// before the restore's or into the dump's records; verbose echoes the
// script and the end line, not the session's start.
func TestZshSessionDebugTrapAndVerbose(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	var st *SessionState
	for i, s := range []struct{ script, out, err string }{
		{`trap 'echo dbg' DEBUG; X=1`, "dbg\ndbg\n", ""},
		{`echo $X`, "dbg\n1\ndbg\n", ""},
		{`trap - DEBUG; setopt verbose; Y=2`, "dbg\n", ""},
		{`echo $Y`, "2\n", "echo $Y\n"},
	} {
		out, errOut, _, next, err := zshSessionRun(t, f, home, st, s.script)
		if err != nil {
			t.Fatalf("%q: Finish: %v (stderr %q)", s.script, err, errOut)
		}
		if !strings.HasPrefix(errOut, s.err) || out != s.out || i == 3 && strings.Contains(errOut, "__snapexec_exit") {
			t.Errorf("%q: stdout %q, stderr %q; want %q and stderr from %q on", s.script, out, errOut, s.out, s.err)
		}
		st = next
	}
}

// BenchmarkZshSessionCommand times a zsh session command after a state
// change in a state of 200 functions, 50 aliases and 100 exports, as
// BenchmarkSessionCommand does for bash.
func BenchmarkZshSessionCommand(b *testing.B) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	var profile strings.Builder
	for i := range 200 {
		fmt.Fprintf(&profile, "fn_%d() { local x=%d; print -r -- \"$x $1\"; }\n", i, i)
	}
	for i := range 50 {
		fmt.Fprintf(&profile, "alias al_%d='echo %d'\n", i, i)
	}
	for i := range 100 {
		fmt.Fprintf(&profile, "export EX_%d=value_%d\n", i, i)
	}
	f := &SessionFiles{}
	b.Cleanup(f.Close)
	var shell, cpu time.Duration
	run := func(state *SessionState, script string) *SessionState {
		c, err := f.Command(SessionLaunch{Shell: Shell{Name: "zsh", Path: zsh}, Env: loginEnv(home), Script: script, State: state})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
		cmd.Env, cmd.Dir = envPairs(c.Env), home
		if state != nil && state.Cwd() != "" {
			cmd.Dir = state.Cwd()
		}
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		shell += time.Since(t0)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		next, err := c.Finish(0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := next.restoreFile(f); err != nil {
			b.Fatal(err)
		}
		return next
	}
	state := run(nil, profile.String())
	b.Logf("state: %d bytes", state.Size())
	shell, cpu = 0, 0
	for b.Loop() {
		state = run(state, `BENCH_N=$(( ${BENCH_N:-0} + 1 )); if (( BENCH_N % 2 )); then cd /tmp; else cd; fi`)
	}
	b.ReportMetric(float64(shell.Microseconds())/float64(b.N), "shell-µs/op")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "shell-cpu-µs/op")
}

// TestZshSessionCarriesTrapFunctions: the functions that stand for the
// ZERR and DEBUG traps carry (the dump removes those traps, and the
// functions with them, after it has listed them), a TRAPDEBUG runs before
// the script's commands only, and a function marked for autoload stays
// marked.
func TestZshSessionCarriesTrapFunctions(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	var st *SessionState
	for _, s := range []struct{ script, out string }{
		{`TRAPZERR() { echo zerr }; autoload -Uz zargs; autoload zmv`, ""},
		{`false; functions zargs zmv`, "zerr\nzargs () {\n\t# undefined\n\tbuiltin autoload -XUz\n}\nzmv () {\n\t# undefined\n\tbuiltin autoload -X\n}\n"},
		{`TRAPDEBUG() { echo dbg }`, "dbg\n"},
		{`echo one; unfunction TRAPDEBUG`, "dbg\none\ndbg\n"},
		{`echo two`, "two\n"},
	} {
		out, errOut, _, next, err := zshSessionRun(t, f, home, st, s.script)
		if err != nil {
			t.Fatalf("%q: Finish: %v (stderr %q)", s.script, err, errOut)
		}
		if out != s.out {
			t.Errorf("%q: stdout %q (stderr %q), want %q", s.script, out, errOut, s.out)
		}
		st = next
	}
}
