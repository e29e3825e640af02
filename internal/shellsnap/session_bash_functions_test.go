package shellsnap

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// fnState returns a session state from a first command with functions f1
// and g (which defines f1), aliases a1 and mk (which defines f1),
// expand_aliases on and a file
// lib.sh in home that defines f1.
func fnState(t *testing.T, f *SessionFiles, home, extra string) *SessionState {
	t.Helper()
	writeFile(t, filepath.Join(home, "lib.sh"), "f1() { echo sourced; }\n")
	st := firstState(t, f, home, `f1() { echo one; }; g() { f1() { echo g; }; }; alias a1='echo a1'; alias mk='f1() { echo mk; }'; shopt -s expand_aliases; `+extra)
	return st
}

func TestKeepsFunctionsReadsTheScript(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := fnState(t, f, home, "")
	for _, tc := range []struct {
		script string
		keep   bool
	}{
		{`cd /tmp`, true},
		{`export A=1; B=$(date); unset -v C; declare -i N=3; local -; set -o pipefail; shopt -s extglob`, true},
		{`BENCH_N=$(( ${BENCH_N:-0} + 1 )); if (( BENCH_N % 2 )); then cd /tmp; else cd; fi`, true},
		{`ls -l | grep x >/dev/null; echo "$HOME"; printf '%s\n' "$x"; read -r line; [[ -v X ]]`, true},
		{`unset A B`, true},
		{`declare -p "$v"; declare -f; declare -F; typeset -p -f f1; export -p; alias; alias -p; trap; trap -p; trap -p USR1`, true},
		{`declare -f -- "$v"`, false},
		{`declare -p`, true},
		{`export -pf f1`, false},
		{`readonly -pf f1`, false},
		{`alias -p q=x`, false},
		{`trap -p; trap - USR1`, false},
		{`trap 'echo dbg' DEBUG`, false},
		{`trap 'echo ret' RETURN`, false},
		{`f1() { :; }`, false},
		{`function f9 { :; }`, false},
		{`f1`, false},
		{`g`, false},
		{`a1`, false},
		{`x | g`, false},
		{`unset f1`, false},
		{`unset -f f9`, false},
		{`unset -vf A`, false},
		{`unset "$v"`, false},
		{`eval 'f9() { :; }'`, false},
		{`source lib.sh`, false},
		{`. lib.sh`, false},
		{`trap 'f9() { :; }' USR1`, false},
		{`command eval x`, false},
		{`builtin source lib.sh`, false},
		{`exec 3>&1`, false},
		{`mapfile -C g -c 1 x`, false},
		{`readarray x`, false},
		{`compgen -F g x`, false},
		{`jobs -x eval x`, false},
		{`enable -f x y`, false},
		{`fc -s`, false},
		{`alias q='f9() { :; }'`, false},
		{`bind -x x`, false},
		{`wait -p v`, false},
		{`declare -f f1`, false},
		{`declare -fx f1`, false},
		{`typeset -F`, true},
		{`export -f f1`, false},
		{`readonly -f f1`, false},
		{`declare "$opt" f1`, false},
		{`declare -n r=x`, false},
		{`local -n r=x`, false},
		{`BASH_ALIASES[q]=x`, false},
		{`B"ASH_ALI"AS\ES[q]=x`, false},
		{`printf -v v x`, false},
		{`printf "$fmt" x`, false},
		{`read "$v"`, false},
		{`getopts ab "$v"`, false},
		{`echo ${!v=x}`, false},
		{`$cmd`, false},
		{`"cd" /; 'echo' "a"'b'`, true},
		{`"eval" x`, false},
		{`"$x"`, false},
		{`mk`, false},
		{`\cd /`, false},
		{`echo $(f1)`, false},
		{`if then`, false},
	} {
		if got := st.keepsFunctions(tc.script); got != tc.keep {
			t.Errorf("keepsFunctions(%q) = %v, want %v", tc.script, got, tc.keep)
		}
	}
	for name, extra := range map[string]string{
		"a trap":                `trap : USR1`,
		"an ignored signal":     `trap '' USR2`,
		"a nameref":             `declare -n r=x`,
		"an alias of a keyword": `alias if='echo'`,
		"an alias of a then":    `alias then=echo`,
		"a function command":    `command() { builtin command "$@"; }`,
	} {
		if fnState(t, f, home, extra).keepsFunctions(`cd /tmp`) {
			t.Errorf("a state with %s keeps its functions", name)
		}
	}
	var none *SessionState
	if none.keepsFunctions(`cd /tmp`) {
		t.Error("a first command keeps functions")
	}
}

// TestSessionFunctionsChangedEveryWay: a command that changes a function in
// any way (the ways keepsFunctions must refuse) hands the change on, as one
// bash that runs the same shows it; a command that cannot leaves the
// functions as they were, without listing them.
func TestSessionFunctionsChangedEveryWay(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	const probe = `declare -f; declare -F`
	type row struct{ extra, script string }
	rows := []row{
		// The state itself runs code: a trap on a signal the script
		// sends, a nameref to BASH_ALIASES.
		{`trap 'f1() { echo trap; }' USR1`, `kill -USR1 $$`},
		{`declare -n r=BASH_ALIASES`, "r[q]='f9() { echo nameref; }'\nq"},
	}
	for _, script := range []string{
		`cd /tmp; x=1`,
		`f1() { echo redefined; }`,
		`eval 'f1() { echo eval; }'`,
		`source ./lib.sh`,
		`. ./lib.sh`,
		`g`,
		`unset f1`,
		`unset -f g`,
		"BASH_ALIASES[q]='f9() { echo alias; }'\nq",
		"declare -n r=BASH_ALIASES; r[q]='f9() { echo nameref; }'\nq",
		"printf -v 'BASH_ALIASES[q]' '%s' 'f9() { echo printf; }'\nq",
		"alias q='f9() { echo alias; }'\nq",
		`trap 'f1() { echo trap; }' USR1; kill -USR1 $$`,
		`mapfile -C g -c 1 x <<<'a'`,
		`command eval 'f1() { echo command; }'`,
		`builtin source ./lib.sh`,
		`x=eval; $x 'f1() { echo expanded; }'`,
		`"eval" 'f1() { echo quoted; }'`,
		`\eval 'f1() { echo backslash; }'`,
		`declare -fx f1`,
		`declare -ft g`,
		`export -pf f1`,
		`readonly -pf g`,
		`mk`,
		`compgen -F g x >/dev/null 2>&1`,
	} {
		rows = append(rows, row{script: script})
	}
	for _, r := range rows {
		st, script := fnState(t, f, home, r.extra), r.script
		_, errOut, _, next, err := sessionRun(t, f, home, st, script)
		if err != nil {
			t.Fatalf("%q: Finish: %v (stderr %q)", script, err, errOut)
		}
		got, _, _, _, _ := sessionRun(t, f, home, next, probe)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-c", `f1() { echo one; }; g() { f1() { echo g; }; }; alias a1='echo a1'; alias mk='f1() { echo mk; }'; shopt -s expand_aliases; `+r.extra+`
`+script+"\n"+probe)
		cmd.Dir, cmd.Env = home, os.Environ()
		want, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("%q in one bash: %v", script, err)
		}
		if got != string(want) {
			t.Errorf("after %q the session's functions are\n%s\nwant\n%s", script, got, want)
		}
	}
}
