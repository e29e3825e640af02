package shellsnap

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// runReplay runs a replay's command in home and returns its output.
func runReplay(t *testing.T, home string, argv []string, env map[string]string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = envPairs(env), home
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("replay %q: %v\nstderr:\n%s", argv, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// TestUnreadablePieceIsNamedAndAlone: a function the shell cannot read back
// (its capture is corrupted here, as a shell bug would print it) is left
// out by name, in the receipt (outcome partial) and the registry, and every
// other piece, the functions after it included, is restored without a
// word on stderr.
func TestUnreadablePieceIsNamedAndAlone(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bash_profile"), `a_first() { echo first; }
broken_fn() { echo BREAK_ME; }
z_after() { echo after; }
alias ll='ls -l'
shopt -s expand_aliases
set -o pipefail
`)
	real := NewCapturer(newTestProcs(t))
	corrupt := func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
		out, err := real(ctx, argv, cwd, env, sb, newSession)
		// Only the capture's declare -f output holds this text; the
		// validation and the replay read the corrupted function.
		return bytes.Replace(out, []byte("echo BREAK_ME"), []byte("if then fi"), 1), err
	}
	c := newTestCache(t, Options{Capture: corrupt})
	t.Cleanup(c.Close)
	l := realBashCommand(home, "a_first; z_after; type -t ll; [[ -o pipefail ]] && echo pipefail; type -t broken_fn || echo no broken_fn")
	p, err := c.Prepare(context.Background(), bashRequest("s"), l)
	want := []Piece{{Kind: "function", Name: "broken_fn"}}
	if err != nil || p.Receipt.Outcome != OutcomePartial || !reflect.DeepEqual(p.Receipt.Unrestored, want) {
		t.Fatalf("Prepare() = %+v, %v; want outcome partial, unrestored %v", p.Receipt, err, want)
	}
	if entries := c.Entries(); len(entries) != 1 || !reflect.DeepEqual(entries[0].Unrestored, want) {
		t.Errorf("Entries() = %+v, want one entry with unrestored %v", entries, want)
	}
	argv, env := replayOf(bashRequest("s"), l, p)
	stdout, stderr := runReplay(t, home, argv, env)
	if wantOut := "first\nafter\nalias\npipefail\nno broken_fn\n"; stdout != wantOut || stderr != "" {
		t.Errorf("replay = stdout %q, stderr %q; want %q and no stderr", stdout, stderr, wantOut)
	}
}

// TestAdversarialProfileRestores: what profiles do that a single eval of
// the state, or a state of exported variables only, lost: every piece
// comes back in a replay as the login shell has it, and nothing is left
// out.
func TestAdversarialProfileRestores(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bash_profile"), `shopt -s extglob
ext_fn() { case $1 in @(a|b)) echo ab;; +([0-9])) echo num;; esac; }
shopt -u extglob
function a=b { echo "a=b ran"; }
function after_fn { echo after; }
readonly RO=fixed
declare -i NUM=6*7
declare -l LOWER=MiXeD
declare -a ARR=(one 'two words' $'three\nlines')
declare -A MAP=([k]=v ['odd key']='x y')
declare -n REF=NUM
trap 'echo bye' EXIT
trap '' HUP
PROMPT_COMMAND='echo prompt'
mkdir -p "$HOME/proj" && cd "$HOME/proj"
set -u
set +B
export UNI_VAR=ü
export HUGE=$(printf '%*s' 100000 '' | tr ' ' x)
`)
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	t.Cleanup(c.Close)
	probe := `shopt -s extglob; ext_fn a; ext_fn 12; 'a=b'; after_fn
declare -p RO NUM LOWER ARR MAP REF PROMPT_COMMAND
echo "pwd=$PWD opts=$- huge=${#HUGE} uni=$UNI_VAR"
trap -p HUP
echo {x,y}`
	l := realBashCommand(home, probe)
	p, err := c.Prepare(context.Background(), bashRequest("s"), l)
	if err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Fatalf("Prepare() = %+v, %v; want used, nothing left out", p.Receipt, err)
	}
	argv, env := replayOf(bashRequest("s"), l, p)
	stdout, stderr := runReplay(t, home, argv, env)
	login, loginErr := runReplay(t, home, []string{"/bin/bash", "-lc", probe}, l.Env)
	if stdout != login || stderr != loginErr {
		t.Errorf("replay differs from the login shell:\nreplay stdout:\n%s\nlogin stdout:\n%s\nreplay stderr %q, login stderr %q", stdout, login, stderr, loginErr)
	}
	for _, want := range []string{"ab\nnum\na=b ran\nafter\n", "declare -i NUM=\"42\"", "declare -r RO=\"fixed\"", "declare -n REF=\"NUM\"", "pwd=" + home + "/proj", "trap -- '' SIGHUP", "{x,y}", "huge=100000 uni=ü"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("replay stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestStatementsKeepBytes: a value that is not UTF-8 (a Latin-1 profile)
// costs neither itself nor the statements around it.
func TestStatementsKeepBytes(t *testing.T) {
	text := "a='x'\nlatin='echo caf\xe9'\ntrap -- 'echo \xff' EXIT\n"
	want := []string{"a='x'", "latin='echo caf\xe9'", "trap -- 'echo \xff' EXIT"}
	if got := statements(text); !reflect.DeepEqual(got, want) {
		t.Errorf("statements(%q) = %q, want %q", text, got, want)
	}
}

// TestShReplayMatchesLogin: what a dash profile leaves behind comes back in
// a replay as sh -lc has it: plain, read-only and exported-without-value
// variables, a value that is not UTF-8, traps and an ignored signal, a
// limit, an alias, a cd, and set -u; and no line number moves.
func TestShReplayMatchesLogin(t *testing.T) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".profile"), `plain='a b
c'
readonly RO=fixed
export NOVALUE
latin='caf`+"\xe9"+`'
trap 'echo bye' EXIT
trap '' HUP
ulimit -S -n 512
alias ll='ls -l'
cd "$HOME/proj"
set -u
`)
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	t.Cleanup(c.Close)
	probe := `echo "$plain|$RO|$latin|$PWD|$-"; readonly -p | grep RO; export -p | grep NOVALUE; trap; ulimit -S -n; alias ll
echo "$LINENO"; no_such_cmd_here`
	l := Launch{Argv: []string{"/bin/sh", "-lc", probe}, Cwd: home, Env: loginEnv(home)}
	p, err := c.Prepare(context.Background(), &Request{ScopeID: "s", Shell: Shell{Name: "sh", Path: "/bin/sh"}}, l)
	if err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Fatalf("Prepare() = %+v, %v; want used", p.Receipt, err)
	}
	argv, env := Replay(ReplayInput{Snapshot: p.Snapshot, Shell: "sh", Command: l.Argv, Env: l.Env})
	stdout, stderr := runShell(t, home, argv, env)
	login, loginErr := runShell(t, home, l.Argv, l.Env)
	if stdout != login || stderr != loginErr {
		t.Errorf("sh replay differs from sh -lc:\nreplay: %q\nstderr %q\nlogin:  %q\nstderr %q", stdout, stderr, login, loginErr)
	}
	if !strings.Contains(stdout, "bye") || !strings.Contains(stdout, "caf\xe9") {
		t.Errorf("sh replay = %q, want the EXIT trap and the Latin-1 value", stdout)
	}
}

// runShell runs argv in home and returns its output, whatever its status.
func runShell(t *testing.T, home string, argv []string, env map[string]string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = envPairs(env), home
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return out.String(), errOut.String()
}

// TestZshValidationRunsNoExitHook: a zsh validation defines the state's
// functions and variables, zshexit, TRAPEXIT and zshexit_functions among
// them, and runs none of them at its exit: a capture runs no code of the
// profile but the login sequence's.
func TestZshValidationRunsNoExitHook(t *testing.T) {
	sh := shellByName(t, "zsh")
	plan := &restorePlan{shell: "zsh", steps: []step{
		{kind: "function", name: "zshexit", code: "zshexit() { print ran zshexit; }"},
		{kind: "function", name: "TRAPEXIT", code: "TRAPEXIT() { print ran TRAPEXIT; }"},
		{kind: "function", name: "hook", code: "hook() { print ran hook; }"},
		{kind: "variable", name: "zshexit_functions", code: "typeset -a zshexit_functions=( hook )"},
	}}
	path := filepath.Join(t.TempDir(), "validation")
	if err := os.WriteFile(path, []byte(zshValidation(plan)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sh.path, "-f", path).CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("zsh -f VALIDATION = %q, %v; want no output: no piece failed, nothing ran at the exit", out, err)
	}
}
