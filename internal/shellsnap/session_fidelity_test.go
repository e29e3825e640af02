package shellsnap

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/session/sessiontest"
)

// fidelityMark separates the reference's outputs of each probe.
const fidelityMark = "::fidelity-probe::"

// sessionMatchesBash runs steps, one session command each, and after each a
// probe (a session command of its own), and compares what each probe prints
// (stdout and stderr together) with what it prints in one bash fed the same
// steps and probes through a pipe, as a persistent shell is fed. A step
// that leaves no state fails the test. Both run "\exec 2>&1" before the
// probe and "\exec >/dev/null 2>&1" after it, which a DEBUG trap sees.
func sessionMatchesBash(t *testing.T, steps []string, probe string) {
	t.Helper()
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	// What the steps print goes nowhere; each probe's output, and a mark
	// after it, to the descriptor 3 (the mark by a program, which no alias
	// or function of the steps can stand for; no group, which an alias
	// named "{" would break).
	ref := strings.Builder{}
	ref.WriteString("exec 3>&1 >/dev/null 2>&1\n")
	for _, s := range steps {
		ref.WriteString(s + "\n\\exec >&3 2>&3\n\\exec 2>&1\n" + probe + "\n\\exec >/dev/null 2>&1\n/bin/echo " + fidelityMark + " >&3\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-l")
	cmd.Env, cmd.Dir = envPairs(loginEnv(home)), home
	cmd.Stdin = strings.NewReader(ref.String())
	out, err := cmd.Output()
	if err != nil && ctx.Err() != nil {
		t.Fatalf("the reference bash: %v", err)
	}
	// Line numbers of error messages count from the script's start in
	// one bash, from the command's in a session.
	lineNo := regexp.MustCompile(`: line [0-9]+: `)
	want := strings.Split(lineNo.ReplaceAllString(string(out), ": line N: "), fidelityMark+"\n")
	var st *SessionState
	for i, s := range steps {
		_, errOut, _, next, err := sessionRun(t, f, home, st, s)
		if err != nil {
			t.Fatalf("step %d %q: Finish: %v (stderr %q)", i, s, err, errOut)
		}
		st = next
		got, _, _, next, err := sessionRun(t, f, home, st, "\\exec 2>&1\n"+probe+"\n\\exec >/dev/null 2>&1")
		if err != nil {
			t.Fatalf("probe after step %d %q: Finish: %v", i, s, err)
		}
		st = next
		got = lineNo.ReplaceAllString(got, ": line N: ")
		if i >= len(want) || got != want[i] {
			w := "<none>"
			if i < len(want) {
				w = want[i]
			}
			t.Fatalf("after %q the session's probe differs from one bash's:\n%s", strings.Join(steps[:i+1], "\n"), sessiontest.LineDiff(w, got))
		}
	}
}

// TestExportedNamerefCarries: a profile that exports a nameref (which
// exports the nameref itself, its target's name as its value) replays, and
// starts a session, as one bash that runs it shows it; the capture once
// emptied the nameref's target, through the nameref, as it empties the
// exported values.
func TestExportedNamerefCarries(t *testing.T) {
	const probe = `declare -p r x; printenv x r; echo "r=$r"`
	bash := testShell{name: "bash", path: "/bin/bash"}
	for _, profile := range []string{
		"x=1; declare -nx r=x\n",
		"x=1; declare -n r=x; export r\n",
		"export x=2; declare -nx r=x\n",
	} {
		home := t.TempDir()
		writeFile(t, filepath.Join(home, ".bash_profile"), profile)
		ref := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", profile+probe)
		ref.Env, ref.Dir = envPairs(loginEnv(home)), home
		want, _ := ref.CombinedOutput()
		snap := captureLogin(t, bash, home)
		if out, errOut := replayRun(t, bash, home, snap, probe); out+errOut != string(want) {
			t.Errorf("profile %q replayed: %q, want (one bash) %q", profile, out+errOut, want)
		}
		f := &SessionFiles{}
		defer f.Close()
		st := runToState(t, f, SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: loginEnv(home), Script: ":", Snapshot: snap}, home)
		if out, errOut, _, _, err := sessionRun(t, f, home, st, probe); err != nil || out+errOut != string(want) {
			t.Errorf("profile %q, in a session: %q (%v), want (one bash) %q", profile, out+errOut, err, want)
		}
	}
}

// TestSessionCarriesAliasesOfItsOwnWords: a state whose aliases or
// functions are named as the words of the session's own lines (the dump's
// group, the special builtins it calls) carries as one bash carries it.
// bash reads an alias before a reserved word, so a line of the dump that
// started with "{" once ran the alias and failed to parse.
func TestSessionCarriesAliasesOfItsOwnWords(t *testing.T) {
	const probe = `echo "x=${x-unset}"; alias -p; declare -F; shopt -p expand_aliases inherit_errexit shift_verbose sourcepath interactive_comments; [[ -o posix ]] && echo posix; echo "${POSIXLY_CORRECT-no POSIXLY_CORRECT}"`
	var aliases []string
	for _, name := range []string{"{", "}", "if", "then", "fi", "[[", "trap", ".", "builtin", "command", "unset", "set", "declare", "return"} {
		aliases = append(aliases, quote(name+"=echo alias "+name+";"))
	}
	rows := map[string][]string{
		"aliases": {"shopt -s expand_aliases; alias " + strings.Join(aliases, " ") + "\nx=1", "x=2", "cd /"},
		"functions": {
			`function trap { echo fn trap; }; function . { echo fn dot; }; function unset { echo fn unset; }; function builtin { echo fn builtin; }; x=1`,
			"x=2", "cd /",
		},
		// posix mode unsets POSIXLY_CORRECT as it ends, and sets options
		// without listing them in BASHOPTS.
		"POSIXLY_CORRECT": {"export POSIXLY_CORRECT=1; x=1", "x=2", "unset POSIXLY_CORRECT; shopt -s extglob; x=3"},
		"posix options":   {"set -o posix; x=1", "shopt -u expand_aliases inherit_errexit; x=2"},
		"posix mode":      {"set -o posix; shopt -s expand_aliases; alias '{'='echo brace'; x=1", "x=2"},
	}
	for name, steps := range rows {
		t.Run(name, func(t *testing.T) { sessionMatchesBash(t, steps, probe) })
	}

	// The status the command leaves with is its own, a function named
	// return or builtin notwithstanding.
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := firstState(t, f, home, `function return { :; }; function builtin { :; }`)
	for script, want := range map[string]int{"(exit 3)": 3, "exit 4": 4} {
		if _, errOut, code, _, err := sessionRun(t, f, home, st, script); err != nil || code != want {
			t.Errorf("%q with functions return and builtin: exit code %d, %v (stderr %q), want %d", script, code, err, errOut, want)
		}
	}
}

// TestSessionTracesOnlyTheScript: with xtrace on, a command's trace is
// the one bash's trace of the script, the session's lines traced nowhere,
// an alias named "{" notwithstanding; with verbose on, bash echoes the
// script and, after it, the dump's two lines (each marked), and nothing
// of the start.
func TestSessionTracesOnlyTheScript(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := firstState(t, f, home, "shopt -s expand_aliases; alias '{'='echo brace'\nset -x")
	for _, script := range []string{"Y=2", "exit 3", "set -e; false"} {
		_, errOut, _, next, err := sessionRun(t, f, home, st, script)
		if err != nil {
			t.Fatalf("%q: Finish: %v (stderr %q)", script, err, errOut)
		}
		ref := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", "set -x\n"+script)
		ref.Env, ref.Dir = envPairs(loginEnv(home)), home
		want, _ := ref.CombinedOutput()
		if errOut != string(want) {
			t.Errorf("with xtrace on, %q traces %q, want (one bash) %q", script, errOut, want)
		}
		if script == "Y=2" {
			st = next
		}
	}
	_, errOut, _, st, err := sessionRun(t, f, home, st, "set +x -v")
	if err != nil {
		t.Fatalf("Finish: %v (stderr %q)", err, errOut)
	}
	_, errOut, _, _, err = sessionRun(t, f, home, st, "Z=3")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if err != nil || len(lines) != 3 || lines[0] != "Z=3" || !strings.HasSuffix(lines[1], "# __snapexec_end") || !strings.HasSuffix(lines[2], "# __snapexec_end") {
		t.Errorf("with verbose on, Z=3 echoes %q (%v); want Z=3 and the dump's two lines", errOut, err)
	}
}

// TestSessionCarriesFunctrace: functrace (set -T) carries as in one bash,
// turned on and off by the command before and kept by one that leaves it:
// the dump leaves it out of its records, the options show it.
func TestSessionCarriesFunctrace(t *testing.T) {
	sessionMatchesBash(t, []string{"set -T; x=1", "x=2", "set +o functrace; x=3", "set -o functrace"}, `set -o | grep -w functrace`)
}

// TestSessionCarriesUnsetShellVariables: a variable bash sets as it starts
// (IFS, OLDPWD, PS4, OPTIND, ...) that a command unset stays unset, as in
// one bash; a fresh shell has it again unless the restore unsets it.
func TestSessionCarriesUnsetShellVariables(t *testing.T) {
	const names = "BASH BASH_LOADABLES_PATH BASH_VERSION COMP_WORDBREAKS HOSTNAME HOSTTYPE IFS MACHTYPE OLDPWD OPTERR OPTIND OSTYPE PS4 SHELL TERM"
	const probe = `for v in ` + names + `; do declare -p "$v" 2>/dev/null || echo "$v unset"; done`
	sessionMatchesBash(t, []string{"cd /tmp; unset " + names, "cd /; x=1", "IFS=:; OPTIND=3"}, probe)
	sessionMatchesBash(t, []string{"x=1", "cd /tmp; export -n OLDPWD; export PS4='> '", "cd /; declare -l TERM"}, probe)
}

// TestSessionCarriesADisabledTrap: with the trap builtin disabled (enable
// -n trap), which the session's own lines call, a command's state carries
// as in one bash, its traps included (the dump
// lists them once it has enabled the builtin), and one that leaves by exit
// hands its state on: the session's EXIT trap is set all the same, and
// runs the dump once.
func TestSessionCarriesADisabledTrap(t *testing.T) {
	const probe = `echo "x=$x"; enable -n; if enable -a | grep -qx 'enable trap'; then trap -p USR1; fi`
	sessionMatchesBash(t, []string{"trap 'echo usr1' USR1; trap 'echo bye' EXIT; enable -n trap echo; x=1", "x=2", "enable echo; x=3", "enable trap; x=4"}, probe)

	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := firstState(t, f, home, "enable -n trap")
	if _, errOut, code, next, err := sessionRun(t, f, home, st, "x=5; exit 3"); err != nil || code != 3 {
		t.Errorf("exit 3 with trap disabled: code %d, %v (stderr %q); want 3 and a state", code, err, errOut)
	} else if out, _, _, _, _ := sessionRun(t, f, home, next, probe); out != "x=5\nenable -n trap\n" {
		t.Errorf("after exit 3 with trap disabled: %q", out)
	}
}

// TestSessionCarriesTrapsQuietly: a state's DEBUG and RETURN traps act on
// the next command as in one bash, not on the session's restore and
// start (they printed before the command's own output).
func TestSessionCarriesTrapsQuietly(t *testing.T) {
	sessionMatchesBash(t, []string{
		`trap 'echo "dbg $BASH_COMMAND"' DEBUG; trap 'echo "ret it'\''s"' RETURN; trap 'echo err' ERR; x=1`,
		"f() { :; }; f; x=2",
		"false; trap - DEBUG; x=3",
	}, `echo "x=$x"; trap -p DEBUG RETURN ERR`)
}

// TestSessionSaysItsDirectoryIsGone: a persistent shell stays in a
// directory that was removed; a session's next command cannot, starts in
// / (as the service starts it) and says so on its stderr.
func TestSessionSaysItsDirectoryIsGone(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := firstState(t, f, home, "mkdir -p gone && cd gone && rmdir ../gone")
	out, errOut, _, _, err := sessionRun(t, f, home, st, "pwd")
	want := "bash: the session's directory " + filepath.Join(home, "gone") + " is gone: this command starts in /\n"
	if err != nil || out != "/\n" || errOut != want {
		t.Errorf("a command after its directory was removed: stdout %q, stderr %q (%v); want / and %q", out, errOut, err, want)
	}
}
