package shellsnap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"
)

// sessionRun runs one session command from state and returns its output,
// exit code and the state it left (nil, with the error, when none).
func sessionRun(t *testing.T, f *SessionFiles, home string, state *SessionState, script string) (stdout, stderr string, code int, next *SessionState, err error) {
	t.Helper()
	return shellSessionRun(t, f, Shell{Name: "bash", Path: "/bin/bash"}, home, state, script)
}

// shellSessionRun runs one session command of shell from state.
func shellSessionRun(t *testing.T, f *SessionFiles, shell Shell, home string, state *SessionState, script string) (stdout, stderr string, code int, next *SessionState, err error) {
	t.Helper()
	return envSessionRun(t, f, shell, loginEnv(home), home, state, script)
}

// envSessionRun runs one session command of shell from state, in a session
// whose environment is env.
func envSessionRun(t *testing.T, f *SessionFiles, shell Shell, env map[string]string, home string, state *SessionState, script string) (stdout, stderr string, code int, next *SessionState, err error) {
	t.Helper()
	c, err := f.Command(SessionLaunch{Shell: shell, Env: env, Script: script, State: state})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = envPairs(c.Env)
	cmd.Dir = home
	if state != nil && state.Cwd() != "" {
		cmd.Dir = state.Cwd()
		if _, err := os.Stat(cmd.Dir); err != nil {
			cmd.Dir = "/" // as the service starts a command whose directory is gone
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		t.Fatalf("session command %q: %v", script, runErr)
	}
	next, err = c.Finish(0)
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode(), next, err
}

// firstState runs a session's first command, script, and returns the state
// it hands on; a command that hands on none fails t.
func firstState(t *testing.T, f *SessionFiles, home, script string) *SessionState {
	t.Helper()
	_, errOut, _, st, err := sessionRun(t, f, home, nil, script)
	if err != nil {
		t.Fatalf("first command %q: %v (stderr %q)", script, err, errOut)
	}
	return st
}

func TestSessionCarriesState(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	var st *SessionState
	steps := []struct {
		script, out string
		code        int
	}{
		{"cd /tmp && export FOO=bar; x=1; declare -a arr=(a 'b c'); f() { echo f$1; }; alias ll='ls -l'; set -o noclobber; shopt -s extglob; umask 027; trap 'echo usr1' USR1", "", 0},
		{`pwd; echo FOO=$FOO x=$x "${arr[1]}"; f 1; alias ll; [[ -o noclobber ]] && echo nc; shopt -q extglob && echo eg; umask; trap -p USR1`, "/tmp\nFOO=bar x=1 b c\nf1\nalias ll='ls -l'\nnc\neg\n0027\ntrap -- 'echo usr1' SIGUSR1\n", 0},
		{"unset FOO; unset -f f; unalias ll; cd /; exit 3", "", 3},
		{`pwd; echo "FOO=${FOO-unset}"; type f 2>&1 | head -1; alias ll 2>&1`, "/\nFOO=unset\n/bin/bash: line 1: type: f: not found\n/bin/bash: line 1: alias: ll: not found\n", 1},
		{"set -e; y=2; false; y=3", "", 1},
		{`echo y=$y`, "y=2\n", 0},
		{`trap 'echo bye' EXIT; z=1`, "", 0},
		{`echo z=$z; trap -p EXIT | grep -c bye`, "z=1\n0\n", 1},
		{`set -- a 'b c'; ulimit -S -n 1000`, "", 0},
		{`echo "$# $2"; ulimit -S -n`, "2 b c\n1000\n", 0},
		// A backslash last is a literal one to bash -c; the dump's line
		// after it must not join the script's last line.
		{`w=4; echo hi \`, "hi \\\n", 0},
		{`echo w=$w`, "w=4\n", 0},
	}
	for i, s := range steps {
		out, errOut, code, next, err := sessionRun(t, f, home, st, s.script)
		if err != nil {
			t.Fatalf("step %d %q: Finish: %v (stderr %q)", i, s.script, err, errOut)
		}
		if out != s.out || code != s.code {
			t.Errorf("step %d %q: got %q code %d (stderr %q), want %q code %d", i, s.script, out, code, errOut, s.out, s.code)
		}
		if i == 0 {
			ch := next.Changes(st)
			if !strings.Contains(strings.Join(ch.Variables.Added, " "), "FOO") {
				t.Errorf("changes %+v lack FOO", ch)
			}
		}
		st = next
	}
}

// TestSessionCarriesEveryTrap: the dump runs in a sourced file, where bash
// hides DEBUG and RETURN traps (without functrace); they carry all the same.
func TestSessionCarriesEveryTrap(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	_, errOut, _, st, err := sessionRun(t, f, home, nil, `trap 'echo dbg >&2' DEBUG; trap 'echo ret >&2' RETURN; trap 'echo err >&2' ERR; trap 'echo int' INT; X=1`)
	if err != nil {
		t.Fatal(err)
	}
	out, _, _, _, err := sessionRun(t, f, home, st, `trap -p DEBUG RETURN ERR INT`)
	if err != nil {
		t.Fatal(err)
	}
	want := "trap -- 'echo dbg >&2' DEBUG\ntrap -- 'echo ret >&2' RETURN\ntrap -- 'echo err >&2' ERR\ntrap -- 'echo int' SIGINT\n"
	if out != want {
		t.Errorf("traps after a command that set them:\n%s\nwant\n%s(its stderr %q)", out, want, errOut)
	}
}

// TestSessionCarriesAllexport: with allexport on, every variable the dump
// sets is exported, and the dump, which empties the exported values before
// it prints the variables, must leave its own alone.
func TestSessionCarriesAllexport(t *testing.T) {
	f := &SessionFiles{}
	defer f.Close()
	home := t.TempDir()
	st := firstState(t, f, home, "arr=(x p); v=1; set -o allexport; w=2")
	out, _, _, _, err := sessionRun(t, f, home, st, `declare -p arr v w; [[ -o allexport ]] && echo on`)
	want := "declare -a arr=([0]=\"x\" [1]=\"p\")\ndeclare -- v=\"1\"\ndeclare -x w=\"2\"\non\n"
	if err != nil || out != want {
		t.Errorf("after set -o allexport: %q, %v; want %q", out, err, want)
	}
}

// TestSessionFunctionsUnchanged: a command that leaves the functions as
// they were hands on the previous state's function records (fnsame), and
// one that changes any function's text, even to one of the same length,
// dumps them again.
func TestSessionFunctionsUnchanged(t *testing.T) {
	f := &SessionFiles{}
	defer f.Close()
	home := t.TempDir()
	run := func(st *SessionState, script string) (string, *SessionState) {
		t.Helper()
		out, errOut, _, next, err := sessionRun(t, f, home, st, script)
		if err != nil {
			t.Fatalf("%q: Finish: %v (stderr %q)", script, err, errOut)
		}
		return out, next
	}
	_, s1 := run(nil, `f() { echo one; }; g() { echo "two"; }; function a=b { echo ab; }`)
	out, s2 := run(s1, `x=1; f; g; type -t a=b`)
	if out != "one\ntwo\nfunction\n" {
		t.Errorf("functions after their definition: %q", out)
	}
	if s2.fns == nil || s2.fns != s1.fns {
		t.Errorf("a command that changed no function has listing %v, want its state's %v", s2.fns, s1.fns)
	}
	out, s3 := run(s2, `f; g; type -t a=b; f() { echo eno; }`)
	if out != "one\ntwo\nfunction\n" || s3.fns == s2.fns {
		t.Errorf("before the change: %q, listing kept %t", out, s3.fns == s2.fns)
	}
	out, s4 := run(s3, `f; g; type -t a=b; declare -F | wc -l`)
	if out != "eno\ntwo\nfunction\n3\n" || s4.fns != s3.fns {
		t.Errorf("after the change: %q, listing kept %t", out, s4.fns == s3.fns)
	}
	fork, _ := run(s2, `f`)
	if fork != "one\n" {
		t.Errorf("from the earlier state: %q, want one", fork)
	}

	// A listing that cannot be read is no listing: removing every function
	// must not be taken for "the same as an empty listing".
	if err := os.Remove(s4.fns.path); err != nil {
		t.Fatal(err)
	}
	_, s5 := run(s4, `unset -f f g a=b`)
	if out, _ := run(s5, `declare -F | wc -l`); out != "0\n" {
		t.Errorf("functions after unset -f of all, the listing gone: %q, want 0", out)
	}
}

// TestSessionSizeCountsUnchangedFunctions: a state whose functions were
// handed on unchanged is as large as if they were dumped again, for
// stateBytes and for the bound.
func TestSessionSizeCountsUnchangedFunctions(t *testing.T) {
	f := &SessionFiles{}
	defer f.Close()
	home := t.TempDir()
	s1 := firstState(t, f, home, `f() { echo "`+strings.Repeat("x", 4000)+`"; }`)
	_, _, _, s2, err := sessionRun(t, f, home, s1, `:`)
	if err != nil || s2.fns != s1.fns {
		t.Fatalf("an unchanged command: %v, listing kept %t", err, s2 != nil && s2.fns == s1.fns)
	}
	if d := s1.Size() - s2.Size(); d > 1000 || d < -1000 {
		t.Errorf("Size() = %d after the function's definition, %d after a command that left it: want about the same", s1.Size(), s2.Size())
	}
	c, err := f.Command(SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: loginEnv(home), Script: ":", State: s2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env, cmd.Dir = envPairs(c.Env), home
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finish(s2.Size() - 1000); !errors.Is(err, ErrSessionStateTooLarge) {
		t.Errorf("Finish(bound below the state's size) = %v, want ErrSessionStateTooLarge", err)
	}
}

// TestSessionKeptFunctionsKeepTheEnvironment: a command that cannot change
// the functions (keepsFunctions) hands on the environment a program of the
// state gets, exported functions included, as a command that lists them
// does: its dump runs env when the state exports a function, which it
// knows from the state.
func TestSessionKeptFunctionsKeepTheEnvironment(t *testing.T) {
	f := &SessionFiles{}
	defer f.Close()
	home := t.TempDir()
	s1 := firstState(t, f, home, `f() { echo f; }; export -f f; export A=1`)
	if !s1.keepsFunctions("x=2") {
		t.Fatal(`keepsFunctions("x=2") = false, want true`)
	}
	_, errOut, _, s2, err := sessionRun(t, f, home, s1, "x=2")
	if err != nil {
		t.Fatalf("Finish: %v (stderr %q)", err, errOut)
	}
	for _, name := range []string{"BASH_FUNC_f%%", "A"} {
		if got, want := s2.final[name], s1.final[name]; got != want || want == "" {
			t.Errorf("the environment's %s after a command that kept the functions: %q, want %q", name, got, want)
		}
	}
}

// TestSessionCarriesTheEnvironment: the environment a command's programs get
// is the one a persistent bash would give them after the same commands,
// whether the dump lists the exported variables itself or, with an exported
// function, runs env; variables bash cannot name pass through.
func TestSessionCarriesTheEnvironment(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	env := loginEnv(home)
	env["a.b"] = "odd name"
	env["BASH_FUNC_q%%"] = "() {  echo q\n}"
	steps := []string{
		"export A=1 B='x y'; declare -ix N=3",
		"fn() { echo fn; }; export -f fn",
		"unset -f fn q",
		"export -n A; arr=(1 2); export arr E=$'a\\nb'",
		"declare -x U; export B=",
	}
	// printEnv lists the environment a program gets, but what a shell sets
	// for each command.
	const printEnv = `env -0 | LC_ALL=C sort -z | tr '\0' '\n' | grep -av '^_=\|^SHLVL=\|^BASH_ENV=\|^__SNAPEXEC'`
	st := runToState(t, f, SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: env, Script: ":"}, home)
	for i, step := range steps {
		for _, script := range []string{step, printEnv} {
			c, err := f.Command(SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: env, Script: script, State: st})
			if err != nil {
				t.Fatal(err)
			}
			got, err := runSessionCommand(c, home)
			if err != nil {
				t.Fatalf("step %d %q: %v: %s", i, script, err, got)
			}
			if st, err = c.Finish(0); err != nil {
				t.Fatalf("step %d %q: Finish: %v", i, script, err)
			}
			c.Close()
			if script != printEnv {
				continue
			}
			ref := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", strings.Join(steps[:i+1], "\n")+"\n"+printEnv)
			ref.Env, ref.Dir = envPairs(env), home
			want, err := ref.CombinedOutput()
			if err != nil {
				t.Fatalf("reference: %v: %s", err, want)
			}
			if string(got) != string(want) {
				t.Errorf("after %q the environment is\n%s\nwant (one bash)\n%s", strings.Join(steps[:i+1], "; "), got, want)
			}
		}
	}
}

// TestSessionCarriesOddAliases: aliases listed by alias -p come back as bash
// had them, quotes, newlines, a leading "-" and all.
func TestSessionCarriesOddAliases(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	const define = `alias a='echo "it'\''s"' -x='echo dash' e= nl=$'echo one\necho two' q="'"`
	st := firstState(t, f, home, define)
	ref, err := exec.Command("/bin/bash", "--norc", "-c", define+"; alias -p").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := string(ref)
	out, errOut, _, _, err := sessionRun(t, f, home, st, `alias -p`)
	if err != nil || out != want {
		t.Errorf("alias -p after the aliases' command = %q, %v (stderr %q); want %q", out, err, errOut, want)
	}
	if got := st.Changes(nil).Aliases.Added; strings.Join(got, " ") != "-x a e nl q" {
		t.Errorf("aliases added = %q, want -x a e nl q", got)
	}
}

// TestSessionNames: a state lists its names as Changes(nil) adds them, and a
// caller that changes the lists it got does not change the next caller's.
func TestSessionNames(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := firstState(t, f, home, `greet() { echo hi; }; alias ll='ls -l'; export FOO=bar; declare -a ARR=(1 2)`)
	all := st.Changes(nil)
	for range 2 {
		vars, fns, aliases := st.Names()
		if !slices.Equal(vars, all.Variables.Added) || !slices.Equal(fns, all.Functions.Added) || !slices.Equal(aliases, all.Aliases.Added) {
			t.Fatalf("Names() = %q, %q, %q; want Changes(nil)'s added %q, %q, %q", vars, fns, aliases, all.Variables.Added, all.Functions.Added, all.Aliases.Added)
		}
		if !slices.Contains(vars, "FOO") || !slices.Contains(vars, "ARR") || !slices.Equal(fns, []string{"greet"}) || !slices.Equal(aliases, []string{"ll"}) {
			t.Fatalf("Names() = %q, %q, %q; want FOO and ARR, greet, ll among them", vars, fns, aliases)
		}
		vars[0], fns[0], aliases[0] = "changed", "changed", "changed"
	}
}

// TestSessionNoStandbyForWhatStandsForTheWait: a state that defines what the
// standby's wait line or go-ahead would run in place of the shell's own (a
// function named exec; the go-ahead's variable, with attributes that change
// what is assigned to it, or read-only, or a name reference) gets no standby
// shell, where a plain state does: its commands run fresh, as they must.
func TestSessionNoStandbyForWhatStandsForTheWait(t *testing.T) {
	f := &SessionFiles{}
	defer f.Close()
	for _, c := range []struct {
		script  string
		standby bool
	}{
		{`greet() { echo hi; }`, true},
		{`exec() { echo "myexec $*"; }`, false},
		{`declare -l ` + standbyScriptVar, false},
		{`declare -u ` + standbyScriptVar, false},
		{`declare -i ` + standbyScriptVar, false},
		{`readonly ` + standbyScriptVar + `=1`, false},
		{`Q=keep; declare -n ` + standbyScriptVar + `=Q`, false},
	} {
		// As a session's second command, whose state a narrow dump may make.
		home := t.TempDir()
		_, errOut, _, st, err := sessionRun(t, f, home, firstState(t, f, home, "true"), c.script)
		if err != nil {
			t.Fatalf("%s: %v (stderr %q)", c.script, err, errOut)
		}
		// And after a later command that changes nothing of it.
		_, errOut, _, later, err := sessionRun(t, f, home, st, "X=1")
		if err != nil {
			t.Fatalf("%s; X=1: %v (stderr %q)", c.script, err, errOut)
		}
		for _, st := range []*SessionState{st, later} {
			if _, err := st.restoreFile(f); err != nil {
				t.Fatalf("%s: restore file: %v", c.script, err)
			}
			if got := st.standby != ""; got != c.standby {
				t.Errorf("after %q the state has a standby: %t, want %t", c.script, got, c.standby)
			}
		}
	}
}

// TestSessionRunsBashEnvOnce: a session started without a snapshot runs its
// environment's BASH_ENV once, before its first command, as a persistent
// bash runs it when it starts; its definitions carry, and it never runs
// again.
func TestSessionRunsBashEnvOnce(t *testing.T) {
	f := &SessionFiles{}
	defer f.Close()
	home := t.TempDir()
	benv := filepath.Join(home, "benv.sh")
	if err := os.WriteFile(benv, []byte("BENV_VAR=set; echo ran >> "+quote(filepath.Join(home, "runs"))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := loginEnv(home)
	env["BASH_ENV"] = benv
	bash := Shell{Name: "bash", Path: "/bin/bash"}
	var st *SessionState
	for i, want := range []string{"[set]\n", "[set]\n"} {
		out, errOut, _, next, err := envSessionRun(t, f, bash, env, home, st, `echo "[$BENV_VAR]"`)
		if err != nil || out != want {
			t.Fatalf("command %d = %q, %v (stderr %q); want %q", i+1, out, err, errOut, want)
		}
		st = next
	}
	if runs, err := os.ReadFile(filepath.Join(home, "runs")); err != nil || string(runs) != "ran\n" {
		t.Errorf("BASH_ENV ran %q (%v), want once", runs, err)
	}
}

// TestSessionAliasThatOpensTheLastLine: an alias whose value is not whole
// syntax (a here-document, a backslash or a pipe last, a quote or a group
// left open), used on the script's last line, reads the shell's next line
// into the command; the dump's line after the script must not be that line.
// What the command prints, its status and the state it hands on are those
// of the shell running the same script with -c, the dump taken by its EXIT
// trap; the alias defined by the command before or by the script itself.
func TestSessionAliasThatOpensTheLastLine(t *testing.T) {
	cases := []struct{ shell, alias, script string }{
		{"bash", `alias hd='cat <<EOF'`, "V=2; hd\nhello"},
		{"bash", `alias bs='echo a \'`, "V=2; bs"},
		{"bash", `alias p='echo x |'`, "V=2\np"},
		{"bash", `alias q="echo 'x"`, "V=2\nq"},
		{"bash", `alias g='{ echo g'`, "V=2\ng"},
		{"bash", `alias a='true &&'`, "V=2\na"},
		{"zsh", `alias hd='cat <<EOF'`, "V=2; hd\nhello"},
		{"zsh", `alias -g P='| cat'; alias -g Q='|'`, "V=2\necho x Q"},
	}
	for _, tc := range cases {
		for _, same := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/same=%v", tc.shell, tc.alias, same), func(t *testing.T) {
				home := t.TempDir()
				f := &SessionFiles{}
				defer f.Close()
				shell := Shell{Name: "bash", Path: "/bin/bash"}
				defs := "shopt -s expand_aliases; " + tc.alias + "; V=1"
				refArgv := []string{"/bin/bash", "--noprofile", "--norc", "-c"}
				if tc.shell == "zsh" {
					shell = Shell{Name: "zsh", Path: zshPath(t)}
					defs = tc.alias + "; V=1"
					refArgv = []string{shell.Path, "-f", "-c"}
				}
				// The reference: the definitions, then the script, in one
				// shell -c, whose EXIT trap prints V on descriptor 3. zsh
				// reads a -c string whole before it runs any of it, so
				// there a script after the definitions' command is an
				// eval's, read once the aliases are defined.
				refArgv = append(refArgv, defs+"\ntrap 'echo V=$V >&3' EXIT\n"+tc.script)
				if tc.shell == "zsh" && !same {
					refArgv[len(refArgv)-1] = defs + "\ntrap 'echo V=$V >&3' EXIT\neval \"$1\""
					refArgv = append(refArgv, "zsh", tc.script)
				}
				ref := exec.Command(refArgv[0], refArgv[1:]...)
				ref.Env, ref.Dir = envPairs(loginEnv(home)), home
				var refOut, refV bytes.Buffer
				ref.Stdout = &refOut
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				ref.ExtraFiles = []*os.File{w}
				runErr := ref.Run()
				w.Close()
				if _, err := refV.ReadFrom(r); err != nil {
					t.Fatal(err)
				}
				r.Close()
				var ee *exec.ExitError
				if runErr != nil && !errors.As(runErr, &ee) {
					t.Fatal(runErr)
				}
				var st *SessionState
				script := tc.script
				if same {
					st = func() *SessionState {
						_, errOut, _, st, err := shellSessionRun(t, f, shell, home, nil, "V=1")
						if err != nil {
							t.Fatalf("first command: %v (stderr %q)", err, errOut)
						}
						return st
					}()
					script = defs + "\n" + tc.script
				} else {
					_, errOut, _, next, err := shellSessionRun(t, f, shell, home, nil, defs)
					if err != nil {
						t.Fatalf("first command: %v (stderr %q)", err, errOut)
					}
					st = next
					if tc.shell == "bash" && SessionStandbyServes(st, script) {
						t.Errorf("a standby shell serves %q, which its eval would read the dump's line into", script)
					}
				}
				out, errOut, code, next, err := shellSessionRun(t, f, shell, home, st, script)
				if err != nil {
					t.Fatalf("the alias's command: %v (stderr %q)", err, errOut)
				}
				if out != refOut.String() || code != ref.ProcessState.ExitCode() {
					t.Errorf("the alias's command printed %q, status %d (stderr %q); %s -c printed %q, status %d",
						out, code, errOut, tc.shell, refOut.String(), ref.ProcessState.ExitCode())
				}
				if strings.Contains(out+errOut, "__snapexec") {
					t.Errorf("the dump's line reached the command's output: %q %q", out, errOut)
				}
				probe, _, _, _, err := shellSessionRun(t, f, shell, home, next, "echo V=$V")
				if err != nil || probe != refV.String() {
					t.Errorf("the next command saw %q (%v); %s -c ended with %q", probe, err, tc.shell, refV.String())
				}
			})
		}
	}
}

// TestScriptAliasCanOpenLine: a script's own alias commands, read from its
// text when their words are literal; any other alias it names, or an
// assignment to BASH_ALIASES, may define one that opens a line.
func TestScriptAliasCanOpenLine(t *testing.T) {
	for script, want := range map[string]bool{
		`shopt -s expand_aliases; alias '{'='echo brace' trap='echo alias'; echo defined`: false,
		`alias ll='ls -l' la="ls -a"; ll`:                                                 false,
		`alias -p; alias ll`:                                                              false,
		`alias hd='cat <<EOF'`:                                                            true,
		`alias bs='echo a \'`:                                                             true,
		`alias "$name=$value"`:                                                            true,
		`eval "alias x=y"`:                                                                true,
		`builtin alias x=y`:                                                               true,
		`BASH_ALIASES[x]='cat <<EOF'`:                                                     true,
		`echo none here; shopt -s expand_aliases`:                                         false,
		`echo an alias`:                                                                   true,
	} {
		if got := scriptAliasCanOpenLine(script, unquoted(script), syntax.LangBash); got != want {
			t.Errorf("scriptAliasCanOpenLine(%q) = %v, want %v", script, got, want)
		}
	}
}

// TestSessionFileSizeLimitBelowTheState: a script that lowers the file-size
// limit below what its state takes to write ends as it would in bash, not
// killed by SIGXFSZ as the dump writes; the state it could not write is not
// handed on (the session keeps the one before).
func TestSessionFileSizeLimitBelowTheState(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := firstState(t, f, home, "U=0")
	out, errOut, code, _, err := sessionRun(t, f, home, st, "U=1; ulimit -f 1; echo set")
	if out != "set\n" || code != 0 || errOut != "" {
		t.Errorf("ulimit -f 1; echo set: got %q, status %d, stderr %q; want set, 0, as bash -c", out, code, errOut)
	}
	if !errors.Is(err, ErrNoSessionState) {
		t.Errorf("Finish = %v, want ErrNoSessionState: the state did not fit the limit", err)
	}
}

// TestSessionDumpReplacedByTheCommand: the command may write its own
// directory, where its shell leaves the dump; a dump it replaced by a
// symbolic link (to /dev/zero, whose read would never end) or a FIFO
// (whose open would block; the shell's own write to it blocks first) is no
// state, read without following or waiting, and a regular one beyond the
// bound is too large.
func TestSessionDumpReplacedByTheCommand(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := firstState(t, f, home, "X=1")
	// The dump line names the dump's path in the -c string.
	// (the pattern built, so that it does not find itself in the script).
	find := `p=dump; d=$(printf '%s\n' "$BASH_EXECUTION_STRING" | grep -o "[^']*/$p'" | head -n 1); d=${d%\'}; rm -f "$d"; `
	for name, script := range map[string]string{
		"a link to /dev/zero": find + `ln -s /dev/zero "$d"; X=2`,
	} {
		done := make(chan error, 1)
		go func() {
			_, errOut, _, _, err := sessionRun(t, f, home, st, script)
			if errOut != "" {
				t.Errorf("%s: stderr %q", name, errOut)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNoSessionState) {
				t.Errorf("%s: Finish = %v, want ErrNoSessionState", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: Finish did not return", name)
		}
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readScratch(fifo, -1); !errors.Is(err, ErrNoSessionState) {
		t.Errorf("readScratch(a FIFO) = %v, want ErrNoSessionState, at once", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readScratch(big, 99); !errors.Is(err, ErrSessionStateTooLarge) {
		t.Errorf("readScratch(100 bytes, 99) = %v, want ErrSessionStateTooLarge", err)
	}
	if b, err := readScratch(big, 100); err != nil || len(b) != 100 {
		t.Errorf("readScratch(100 bytes, 100) = %d bytes, %v", len(b), err)
	}
	if b, err := readScratch(big, -1); err != nil || len(b) != 100 {
		t.Errorf("readScratch(100 bytes, no bound) = %d bytes, %v", len(b), err)
	}
}
