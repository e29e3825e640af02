package shellsnap

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// varsState returns a session state whose variables tempt the reading of
// changedVars: integers, a value that is an assignment in arithmetic
// (S), arrays, an integer variable, exports.
func varsState(t *testing.T, f *SessionFiles, home, extra string) *SessionState {
	t.Helper()
	st := firstState(t, f, home, `I=3; S='y=5'; T=I; A=(1 2); declare -A M=([k]=v); declare -i N=4; export E=e; P=plain; Z=; f1() { :; }; alias ll='ls -l'; declare -A K=([-]=1 [.]=2 ['a b']=3); V=$'a\x01b\nc\'d"'; `+extra)
	return st
}

// narrowScripts are scripts whose variables changedVars reads (narrow
// true, and then each of want among them) or refuses to.
var narrowScripts = []struct {
	script string
	narrow bool
	want   []string
}{
	{`BENCH_N=$(( ${BENCH_N:-0} + 1 )); if (( BENCH_N % 2 )); then cd /tmp; else cd; fi`, true, []string{"BENCH_N", "PWD", "OLDPWD"}},
	{`I=$((I+1)); (( I++ )); let I+=2 J=I*2`, true, []string{"I", "J"}},
	{`for ((k=0; k<3; k++)); do :; done; echo $((k + ${#P}))`, true, []string{"k"}},
	{`x=1; export P; readonly R=1; declare -A M2; M2[key]=1; A+=(3); A[1]=x; A[I]=z`, true, []string{"x", "P", "R", "M2", "A"}},
	{`unset P I; unset -v Z`, true, []string{"P", "I", "Z"}},
	{`export "X=1" 'P+=2'; declare "D"; readonly "R2=r"`, true, []string{"X", "P", "D", "R2"}},
	{`declare -i "Q3=S"`, false, nil},
	{`declare 'A[S]=1'`, false, nil},
	{`read -r r1 r2 <<< 'a b'; read <<< c; getopts ab: o -a`, true, []string{"r1", "r2", "REPLY", "o", "OPTIND", "OPTARG"}},
	{`[[ abc =~ (b) ]] && echo "${BASH_REMATCH[1]}"; [[ $I -eq 3 ]]; [[ -v P ]]`, true, []string{"BASH_REMATCH"}},
	{`for v in a b; do :; done; select s in q; do break; done <<< 1`, true, []string{"v", "s", "REPLY"}},
	{`: ${Q:=7}; (( Q )); : ${W=word}; echo hi {fd}>/dev/null`, true, []string{"Q", "W", "fd"}},
	{`set -a; NEW=1; set +a; LC_ALL=C; IFS=:; x=1 /bin/true; [ -n "$P" ] && [ "$P" = plain ]`, true, []string{"NEW", "LC_ALL", "IFS", "x"}},
	{`set -o posix; shopt -s extglob; GLOBIGNORE=x; SECONDS=5; BASH_ARGV0=foo`, true, []string{"GLOBIGNORE", "SECONDS", "BASH_ARGV0"}},
	{`Q=1; exit 3`, true, []string{"Q"}},
	{`declare -p "$P" P; declare -f; typeset -p -f f1; export -p`, true, nil},
	{`set -o posix`, true, []string{"POSIXLY_CORRECT", "BASH_COMPAT"}},
	{`shopt -s compat42`, true, []string{"POSIXLY_CORRECT", "BASH_COMPAT"}},
	{`/bin/true`, true, []string{"COLUMNS", "LINES"}},
	{`prlimit --pid $$ --core=0:0`, true, nil}, // a program may change the shell's limits
	{`umask 077; unalias -a`, true, nil},
	{`ls -d / >/dev/null`, true, nil}, // hashes ls
	{`echo $(( $(echo 1) ))`, false, nil},
	{`(( S ))`, false, nil},
	{`echo $(( S + 1 ))`, false, nil},
	{`echo $(( $S ))`, false, nil},
	{`(( T ))`, false, nil}, // T names I: allowed only as an integer
	{`echo ${A[S]}`, false, nil},
	{`echo ${A[$S]}`, false, nil},
	{`echo ${P:S}`, false, nil},
	{`[[ S -eq 1 ]]`, false, nil},
	{`[[ $S -eq 1 ]]`, false, nil},
	{`x='y=5'; (( x ))`, false, nil},
	{`read v <<< 'q=1'; (( v ))`, false, nil},
	{`unset 'A[S]'`, false, nil},
	{`[[ -v A[S] ]]`, false, nil},
	{`test -v 'A[S]'`, false, nil},
	{`[ -v "$P" ]`, false, nil},
	{`[ $P ]`, false, nil},
	{`N=S`, false, nil},
	{`declare -i Z2; Z2=S`, false, nil},
	{`s2=S; (( s2 ))`, false, nil},
	{`: ${Q2:=S}; (( Q2 ))`, false, nil},
	{`x=S; : ${!x}`, false, nil},
	{`x='$((y=5))'; : "${x@P}"`, false, nil},
	{`PS4='+$((y++)) '; set -x; :; set +x`, false, nil},
	{`coproc c { :; }`, false, nil},
	{`"declare" x=1`, false, nil},
	{`f1`, false, nil},
	{`eval 'y=1'`, false, nil},
	{`(( $1 ))`, false, nil},
	{`(( A ))`, false, nil},
	{`(( 0x10 ))`, false, nil},
	{`declare -p 'A[S]'`, true, nil}, // prints; bash evaluates no subscript there
	{`export -n E`, false, nil},      // keepsFunctions reads -n as a nameref's
}

func TestChangedVarsReadsTheScript(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	st := varsState(t, f, home, "")
	for _, tc := range narrowScripts {
		reach := st.reach(tc.script)
		if got := reach.vars != nil; got != tc.narrow {
			t.Errorf("reach(%q) narrow = %v (%v), want %v", tc.script, got, reach.vars, tc.narrow)
			continue
		}
		for _, name := range append(tc.want, alwaysListed...) {
			if tc.narrow && !slices.Contains(reach.vars, name) {
				t.Errorf("reach(%q) = %v, which misses %s", tc.script, reach.vars, name)
			}
		}
	}
}

// TestNarrowListingMatchesFull: a command whose dump lists only the
// variables its script can change leaves the state that listing them all
// leaves, and names the same changes, run fresh and in a standby shell,
// for every script above (those changedVars refuses run their full
// listing both ways), in a state with and without an exported function
// (whose environment the full listing takes from env). The full listing
// is forced by an eval at the script's end, which changes nothing.
func TestNarrowListingMatchesFull(t *testing.T) {
	home := t.TempDir()
	f := &SessionFiles{}
	defer f.Close()
	for _, extra := range []string{"", "export -f f1"} {
		testNarrowListingMatchesFull(t, f, home, varsState(t, f, home, extra))
	}
}

func testNarrowListingMatchesFull(t *testing.T, f *SessionFiles, home string, st *SessionState) {
	narrowed := 0
	for _, tc := range narrowScripts {
		if strings.HasPrefix(tc.script, "coproc") {
			continue // its process id differs from run to run
		}
		_, errFull, _, full, err := sessionRun(t, f, home, st, tc.script+"\n\"eval\" ''")
		if err != nil {
			t.Fatalf("%q, listed whole: %v (stderr %q)", tc.script, err, errFull)
		}
		_, errOut, _, narrow, err := sessionRun(t, f, home, st, tc.script)
		if err != nil {
			t.Fatalf("%q: %v (stderr %q)", tc.script, err, errOut)
		}
		want := fmt.Sprint(full.Changes(st))
		sameState(t, tc.script+" (fresh)", narrow, full)
		if got := fmt.Sprint(narrow.Changes(st)); got != want {
			t.Errorf("%q (fresh) changes %s, want %s", tc.script, got, want)
		}
		standby, err := standbyRun(f, home, st, tc.script)
		if err != nil {
			t.Fatalf("%q in a standby: %v", tc.script, err)
		}
		sameState(t, tc.script+" (standby)", standby, full)
		if got := fmt.Sprint(standby.Changes(st)); got != want {
			t.Errorf("%q (standby) changes %s, want %s", tc.script, got, want)
		}
		if tc.narrow {
			narrowed++
		}
	}
	if narrowed < 10 {
		t.Fatalf("only %d scripts took the narrow listing", narrowed)
	}
}

// sameState fails t when got and want differ in what a next command
// restores: the variables (attributes, values, exports), the functions,
// the aliases and the directory, and the other records.
func sameState(t *testing.T, what string, got, want *SessionState) {
	t.Helper()
	g, w := got.names(), want.names()
	for name, v := range w.vars {
		if g.vars[name] != v {
			t.Errorf("%s: variable %s is %q, want %q", what, name, g.vars[name], v)
		}
	}
	for name := range g.vars {
		if _, ok := w.vars[name]; !ok {
			t.Errorf("%s: variable %s is %q, want none", what, name, g.vars[name])
		}
	}
	if !maps.Equal(g.fns, w.fns) || !maps.Equal(g.aliases, w.aliases) || got.Cwd() != want.Cwd() {
		t.Errorf("%s: functions, aliases or directory differ", what)
	}
	for name, v := range want.final {
		if got.final[name] != v {
			t.Errorf("%s: environment's %s is %q, want %q", what, name, got.final[name], v)
		}
	}
	for name, v := range got.final {
		if _, ok := want.final[name]; !ok {
			t.Errorf("%s: environment's %s is %q, want none", what, name, v)
		}
	}
	// The listing itself, but for what bash changes as it runs the dump,
	// and BASH_ARGV0, which a full listing prints without its value (the
	// $0 step restores it).
	gl, wl := listing(t, got), listing(t, want)
	for name, stmt := range wl {
		if gl[name] != stmt {
			t.Errorf("%s: the listing's %s is %q, want %q", what, name, gl[name], stmt)
		}
	}
	for name := range gl {
		if _, ok := wl[name]; !ok {
			t.Errorf("%s: the listing's %s is %q, want none", what, name, gl[name])
		}
	}
	// In any order: the restore reads them by kind.
	kinds := func(s *SessionState) string {
		var lines []string
		for _, r := range s.recs {
			switch r.kind {
			case "vars", "fn", "fntype", "fnattrs":
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s %q", r.kind, r.name, r.payload))
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	if a, b := kinds(got), kinds(want); a != b {
		t.Errorf("%s: records differ: %q, want %q", what, onlyIn(a, b), onlyIn(b, a))
	}
}

// onlyIn returns the lines of a that b does not have.
func onlyIn(a, b string) []string {
	var only []string
	for _, line := range strings.Split(a, "\n") {
		if !slices.Contains(strings.Split(b, "\n"), line) {
			only = append(only, line)
		}
	}
	return only
}

// listing returns s's declare -p listing by name, without the variables
// bash changes by itself as it runs (and the dump's own).
func listing(t *testing.T, s *SessionState) map[string]string {
	t.Helper()
	vars := s.recordsOf("vars")
	if len(vars) != 1 {
		t.Fatalf("%d vars records", len(vars))
	}
	stmts, ok := declareStatements(vars[0].payload)
	if !ok {
		t.Fatalf("listing %q cannot be read", vars[0].payload)
	}
	volatile := strings.Fields(`_ BASH_ARGC BASH_ARGV BASH_LINENO BASH_SOURCE BASH_COMMAND BASH_SUBSHELL BASHPID
		EPOCHREALTIME EPOCHSECONDS HISTCMD LINENO PIPESTATUS RANDOM SRANDOM SECONDS FUNCNAME BASH_ARGV0`)
	byName := map[string]string{}
	for _, stmt := range stmts {
		_, name, _, _ := declareHead(stmt)
		if !slices.Contains(volatile, name) && !strings.HasPrefix(name, "__snapexec_") {
			byName[name] = stmt
		}
	}
	return byName
}

// standbyRun runs script in a standby shell of state, as the service
// does, and returns the state it ends with.
func standbyRun(f *SessionFiles, home string, state *SessionState, script string) (*SessionState, error) {
	var out bytes.Buffer
	c, cmd, w, err := startStandby(f, home, loginEnv(home), state, &out)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_, goAhead := c.GoAhead(script)
	w.Write(goAhead)
	w.Close()
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	cmd.Wait()
	next, err := c.Finish(0)
	if err != nil {
		return nil, fmt.Errorf("%w (output %q)", err, out.String())
	}
	return next, nil
}

// startStandby starts a standby shell of state (SessionLaunch.Standby) in
// the state's directory, as the service does, its output to out: it waits
// for the go-ahead on w.
func startStandby(f *SessionFiles, home string, env map[string]string, state *SessionState, out *bytes.Buffer) (c *SessionCommand, cmd *exec.Cmd, w *os.File, err error) {
	c, err = f.Command(SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: env, State: state, Standby: true})
	if err != nil {
		return nil, nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	defer r.Close()
	cmd = exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env, cmd.Dir, cmd.ExtraFiles = envPairs(c.Env), home, []*os.File{r}
	if state.Cwd() != "" {
		cmd.Dir = state.Cwd()
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		c.Close()
		w.Close()
		return nil, nil, nil, err
	}
	return c, cmd, w, nil
}
