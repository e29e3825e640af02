package standby

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/shellsnaptest"
)

// zsh is the zsh under test.
const zsh = "/usr/bin/zsh"

// zshRequest asks for scope's snapshot of zsh.
func zshRequest(scope string) *shellsnap.Request {
	return &shellsnap.Request{ScopeID: scope, Shell: shellsnap.Shell{Name: "zsh", Path: zsh}}
}

// zshLaunch prepares the zsh launch of script in home through c, with env,
// and returns what a replay of it needs (of a snapshot used whole, or
// partly).
func zshLaunch(t *testing.T, c *shellsnap.Cache, home, script string, env map[string]string) shellsnap.ReplayInput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := shellsnap.Launch{Argv: []string{zsh, "-lc", script}, Cwd: home, Env: maps.Clone(env)}
	p, err := c.Prepare(ctx, zshRequest("zsh"), l)
	if err != nil || p.Snapshot == nil {
		t.Fatalf("Prepare(zsh -lc %q) = %+v, %v; want a snapshot", script, p.Receipt, err)
	}
	return shellsnap.ReplayInput{Snapshot: p.Snapshot, Shell: "zsh", Command: l.Argv, Env: l.Env}
}

// zshProfiles are the zsh profiles the standby is held to a replay with.
var zshProfiles = map[string]string{
	"rich": shellsnaptest.RichZshProfile,
	// No trap, so that zsh runs the last program in its own place; options
	// that change how the script and the wait line parse and fail; evallineno
	// off, which the go-ahead must leave off.
	"strict": `setopt errexit nounset pipefail ksharrays shwordsplit rcquotes allexport
unsetopt evallineno
IFS=:
alias print='echo hijacked'
helper() { echo helper-ok; }
ARR=(a b)
cd /
`,
	// Global aliases named like every word of the wait line and the
	// go-ahead: none may expand there.
	"aliases": "alias -g unset='echo GA' exec='echo GA' eval='echo GA' evallineno='echo GA' unsetopt='echo GA' /dev/fd/3='echo GA' " +
		"typeset='echo GA' +x='echo GA' SECONDS='echo GA' setopt='echo GA' __CODEX_SHELL_SNAPSHOT_SCRIPT='echo GA' .='echo GA' :='echo GA'\n",
	// sh's emulation, with its options (posixbuiltins, shwordsplit, ...).
	"sh emulation": "emulate sh\nARR=x\n",
	// Options that change globbing, assignment, returns, lookups.
	"odd options": "setopt noglob globsubst warncreateglobal errreturn noaliases pathdirs autocd posixidentifiers\n",
	// C shell quoting: a newline inside quotes is an error.
	"csh": "setopt cshjunkiequotes cshnullglob cshnullcmd\n",
}

// TestZshStandbyMatchesReplay runs one-line scripts through Replay's zsh
// command and through a zsh standby with zshTailScript's script: stdout,
// stderr (errors with their "zsh:1:" and line numbers), the exit status or
// signal and whether the last program is the process itself must be the
// same. The scripts a standby cannot run exactly must be refused.
func TestZshStandbyMatchesReplay(t *testing.T) {
	procs := newTestProcs(t)
	builtins, err := shellBuiltins(context.Background(), procs, "zsh", zsh)
	if err != nil {
		t.Fatal(err)
	}
	const probe = `sh -c 'echo probe=$$'`
	// refuse lists the profiles whose standby must refuse the script, or
	// is "all".
	// unordered marks a script whose output is an exec'd program's
	// environment: the variables a standby's go-ahead exports come later
	// in it (the same variables, in another order).
	tests := []struct {
		script    string
		refuse    string
		unordered bool
	}{
		{script: shellsnaptest.ZshFidelityProbe, refuse: "strict"},
		{script: `echo "u=$_ status=$? zero=$0 args=$# line=$LINENO tens=${SECONDS%?}"; echo $ZSH_EXECUTION_STRING; typeset -p __CODEX_SHELL_SNAPSHOT_SCRIPT 2>&1; env | grep -c __CODEX || true`},
		{script: `setopt | LC_ALL=C sort; echo ${#ARR} $ARR[1]`, refuse: "aliases"},
		{script: `echo ${(ok)options[(R)on]}; [[ -o evallineno ]] && echo evallineno-on`, refuse: "aliases"},
		{script: "false; echo after false"},
		{script: "echo ${NOT_SET_ANYWHERE}; echo not reached"},
		{script: `no_such_command_here; cd /no/such/dir; echo "line $LINENO"; echo $((1/0))`},
		{script: "ls /no/such/*.glob; echo after"},
		{script: "echo before; exit 3"},
		{script: "echo a; return 4; echo b"},
		{script: "kill -SEGV $$"},
		{script: probe},
		{script: probe + "\n"},
		{script: probe + " # a comment"},
		{script: "true && " + probe},
		{script: "false || " + probe},
		{script: "echo first; " + probe},
		{script: probe + " 2>/dev/null"},
		{script: "X=1 sh -c 'echo probe=$$ X=$X'"},
		{script: "printenv _ HOME"},
		{script: "env", unordered: true},
		{script: `sh -c 'kill -SEGV $$'`},
		{script: `sh -c 'exit 7'`},
		{script: probe + " | cat"},
		{script: "! " + probe},
		{script: probe + " >/dev/null &"},
		{script: "TIMEFMT=t; time " + probe},
		{script: "echo hi"},
		{script: `echo "héllo wörld ✓ $ZSH_EXECUTION_STRING"; print -r -- $'\xff' | od -An -c`, refuse: "strict"},
		{script: "[[ -n x ]]"},
		{script: "echo a )", refuse: "all"},
		{script: "while true; do " + probe + "; break; done", refuse: "all"},
		{script: "for i in 1; do " + probe + "; done", refuse: "all"},
		{script: "{ " + probe + "; }", refuse: "all"},
		{script: "( " + probe + " )", refuse: "all"},
		{script: "if true; then " + probe + "; fi", refuse: "all"},
		{script: "command " + probe, refuse: "all"},
		{script: "noglob " + probe, refuse: "all"},
		{script: "setopt nomatch; " + probe, refuse: "all"},
		{script: "no-such-program-here", refuse: "all"},
		{script: "echo one\necho two", refuse: "all"},
		{script: "echo $ZSH_EVAL_CONTEXT", refuse: "all"},
		{script: "f() { echo f; }; f", refuse: "all"},
		{script: "greet you", refuse: "all"},
		{script: "helper", refuse: "all"},
		{script: "echo ll", refuse: "rich"},
		{script: "ls G x", refuse: "rich"},
		{script: "notes.txt", refuse: "all"},
		{script: "eval 'echo hi'", refuse: "all"},
		{script: "source /dev/null", refuse: "all"},
		{script: "trap 'echo t' EXIT; echo hi", refuse: "all"},
		{script: "$CMD hi", refuse: "all"},
		{script: probe + " &|", refuse: "all"},
	}
	for pname, profile := range zshProfiles {
		home := t.TempDir()
		writeFile(t, filepath.Join(home, ".zshrc"), profile)
		env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "DROP_ME": "x", "LANG": "C"}
		c := newTestCache(t, procs)
		for _, tt := range tests {
			t.Run(pname+"/"+tt.script, func(t *testing.T) {
				in := zshLaunch(t, c, home, tt.script, env)
				argv, replayEnv := shellsnap.Replay(in)
				sArgv, sEnv, ok := standbyCommand(in)
				if !ok {
					t.Fatalf("standbyCommand(zsh -lc %q) = _, _, false, want a standby", tt.script)
				}
				// Replay's, but the variables the go-ahead exports.
				wantEnv := maps.Clone(replayEnv)
				maps.DeleteFunc(wantEnv, func(name, _ string) bool { return in.Snapshot.PassedThrough(in.Env)[name] })
				if !maps.Equal(sEnv, wantEnv) {
					t.Errorf("standby environment = %v, want the replay's but the variables passed through: %v", sEnv, wantEnv)
				}
				script, ok := tailScript(in, home, envPairs(replayEnv), builtins)
				refused := tt.refuse == "all" || slices.Contains(strings.Fields(tt.refuse), pname)
				if ok == refused {
					t.Fatalf("tailScript(%q) ok = %v, want %v", tt.script, ok, !refused)
				}
				if !ok {
					return
				}
				fresh := runEnding(t, argv, home, envPairs(replayEnv), nil)
				standby := runEnding(t, sArgv, home, envPairs(sEnv), goAhead(in, script))
				if tt.unordered {
					fresh.stdout, standby.stdout = sortedLines(fresh.stdout), sortedLines(standby.stdout)
				}
				if fresh != standby {
					t.Errorf("script %q:\nReplay's command: %+v\nstandby (script %q): %+v", tt.script, fresh, script, standby)
				}
			})
		}
	}
}

// TestZshStandbyRefusesWhatActsOnTheWait: a zsh state whose options or
// traps would act on the wait line, or on the eval of the script, gets no
// standby; nor does a traced script.
func TestZshStandbyRefusesWhatActsOnTheWait(t *testing.T) {
	procs := newTestProcs(t)
	profiles := map[string]string{
		"xtrace":             "setopt xtrace\n",
		"verbose":            "setopt verbose\n",
		"sourcetrace":        "setopt sourcetrace\n",
		"DEBUG trap":         "trap 'echo debug' DEBUG\n",
		"TRAPDEBUG":          "TRAPDEBUG() { echo debug; }\n",
		"ZERR trap":          "trap 'echo err' ZERR\n",
		"an ignored signal":  "trap '' HUP\n",
		"TRAPINT":            "TRAPINT() { return 1; }\n",
		"disabled builtin":   "disable eval\n",
		"a function builtin": "builtin() { echo fn; }\n",
		"a function exec":    "exec() { echo fn; }\n",
		"not found handler":  "command_not_found_handler() { echo missing; }\n",
		// The go-ahead's variable, with attributes that change what is
		// assigned to it.
		"the go-ahead's variable, lower case": "typeset -l __CODEX_SHELL_SNAPSHOT_SCRIPT\n",
		"the go-ahead's variable, an integer": "typeset -i __CODEX_SHELL_SNAPSHOT_SCRIPT\n",
	}
	for name, profile := range profiles {
		home := t.TempDir()
		writeFile(t, filepath.Join(home, ".zshrc"), profile)
		l := shellsnap.Launch{Argv: []string{zsh, "-lc", "echo hi"}, Cwd: home, Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}}
		p, err := newTestCache(t, procs).Prepare(context.Background(), zshRequest("zsh"), l)
		if err != nil || p.Snapshot == nil {
			t.Logf("a profile with %s: no snapshot (%+v, %v), so no standby", name, p.Receipt, err)
			continue
		}
		in := shellsnap.ReplayInput{Snapshot: p.Snapshot, Shell: "zsh", Command: l.Argv, Env: l.Env}
		if _, _, ok := standbyCommand(in); ok {
			t.Errorf("standbyCommand() for a profile with %s = _, _, true, want false", name)
		}
	}
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".zshrc"), shellsnaptest.RichZshProfile)
	c := newTestCache(t, procs)
	for _, script := range []string{"setopt xtrace; ls", "setopt X_TRACE", "set -x", "set -o verbose"} {
		if _, _, ok := standbyCommand(zshLaunch(t, c, home, script, map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"})); ok {
			t.Errorf("standbyCommand(zsh -lc %q) = _, _, true, want false", script)
		}
	}
	if _, _, ok := standbyCommand(zshLaunch(t, c, home, "echo hi", map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"})); !ok {
		t.Errorf("standbyCommand() for the rich profile = _, _, false, want a standby")
	}
}

// TestZshStandbyServesTheNextWarmCommand: a repeated zsh launch earns a
// standby, which runs the next one-line command with the profile's state;
// a program run last takes its place; a script of two lines runs fresh.
func TestZshStandbyServesTheNextWarmCommand(t *testing.T) {
	r := newZshRig(t, "export FROM_PROFILE=yes\ngreet() { echo \"hello $1\"; }\nsetopt pipefail\n", Options{Max: 4})
	const scope = "zsh-standby"
	r.run(command{scope: scope, script: "echo one"})
	time.Sleep(100 * time.Millisecond)
	r.waitIdle(0)
	if got := r.run(command{scope: scope, script: "echo two"}); got.stdout != "two\n" || got.standby {
		t.Fatalf("repeated launch = %+v, want two, not yet in a standby", got)
	}
	standby := r.waitIdle(1)[0]
	got := r.run(command{scope: scope, script: "echo $FROM_PROFILE; false | true; echo $? $ZSH_EXECUTION_STRING"})
	if got.stdout != "yes\n1 echo $FROM_PROFILE; false | true; echo $? $ZSH_EXECUTION_STRING\n" || got.stderr != "" || !got.standby || got.p.Done() != standby.Done() {
		t.Fatalf("third command = %+v, want yes and pipefail's 1 from the standby that waited", got)
	}
	r.waitIdle(1)
	if got := r.run(command{scope: scope, script: "echo before; sh -c 'kill -SEGV $$'"}); got.p.Result().Status != exec.StatusSignaled || got.p.Result().Signal != "SIGSEGV" || !got.standby {
		t.Errorf("standby command whose program crashes = %+v, want signaled SIGSEGV from a standby", got.p.Result())
	}
	r.waitIdle(1)
	if got := r.run(command{scope: scope, script: "greet a\necho two"}); got.stdout != "hello a\ntwo\n" || got.standby {
		t.Errorf("script of two lines = %+v, want hello a, two from a fresh replay", got)
	}
	if st := r.pool.Stats(); st.Hit != 2 || st.Unfit != 1 {
		t.Errorf("Stats() = %+v, want hit 2, unfit 1", st)
	}
	r.forget(scope)
	r.waitNone()
}

// TestZshStandbyServesAnotherEnvironment: a zsh standby started for one
// request runs another whose environment differs only in variables the
// replay passes through, exactly as a fresh replay of that request, and
// shows nothing of the first request's values.
func TestZshStandbyServesAnotherEnvironment(t *testing.T) {
	home := t.TempDir()
	// KEPT_BY_PROFILE is exported already: the profile's export changes
	// nothing, and it passes through.
	writeFile(t, filepath.Join(home, ".zshrc"), shellsnaptest.RichZshProfile+`export KEPT_BY_PROFILE
typeset -i COUNTER=3
export COUNTER
typeset -l ATTR_LATER
`)
	base := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "DROP_ME": "x", "LANG": "C", "KEPT_BY_PROFILE": "k", "ATTR_LATER": "Mixed"}
	c := newTestCache(t, newTestProcs(t))
	const probe = shellsnaptest.ZshFidelityProbe + `; echo "--- passed"; typeset -p TRACE_ID ONLY_FIRST ONLY_SECOND ODD 2>&1; echo "--- environ"; tr '\0' '\n' </proc/$$/environ | grep -c 'secret-of-''first'`
	request := func(extra map[string]string) shellsnap.ReplayInput {
		env := maps.Clone(base)
		maps.Copy(env, extra)
		return zshLaunch(t, c, home, probe, env)
	}
	first := request(map[string]string{"TRACE_ID": "secret-of-first-1", "ONLY_FIRST": "secret-of-first-2"})
	second := request(map[string]string{"TRACE_ID": "t-2", "ONLY_SECOND": "s", "ODD": "a'b\"c\\\n$(x)\x01\xff"})
	key := func(in shellsnap.ReplayInput) launchKey {
		_, env := shellsnap.Replay(in)
		return keyOf(in.Snapshot, exec.Spec{Argv: []string{zsh}, Dir: home, Env: envPairs(env)}, in.Snapshot.PassedThrough(in.Env))
	}
	if key(first) != key(second) {
		t.Fatalf("zsh launches that differ only in passed-through variables have two keys")
	}
	for name, value := range map[string]string{"PATH": "/bin", "DROP_ME": "y", "LANG": "C.UTF-8", "COUNTER": "1",
		"ATTR_LATER": "x", "shell_only": "w", "EDITOR": "nano", "ZDOTDIR": "/tmp", "FPATH": "/f", "ZSH_X": "1", "lower": "1", "SECONDS": "1", "PROMPT": "x", "A-B": "1"} {
		if key(request(map[string]string{name: value})) == key(first) {
			t.Errorf("a zsh launch with %s=%q shares the key of one without", name, value)
		}
	}
	argv, env := shellsnap.Replay(second)
	fresh, freshErr, freshCode := runCode(t, argv, home, env)
	sArgv, sEnv, ok := standbyCommand(first)
	if !ok {
		t.Fatal("standbyCommand() = _, _, false, want a standby")
	}
	script, ok := tailScript(second, home, envPairs(env), map[string]bool{"echo": true})
	if !ok || script != probe {
		t.Fatalf("tailScript(probe) = %q, %v; want the probe itself", script, ok)
	}
	cmd, stdout, stderr := runShell(t, sArgv, home, envPairs(sEnv), goAhead(second, probe))
	fresh = strings.Replace(fresh, "--- environ\n0\n", "--- environ\n", 1)
	stdout = strings.Replace(stdout, "--- environ\n0\n", "--- environ\n", 1)
	if missing, extra := lineDiff(fresh, stdout); len(missing)+len(extra) > 0 || cmd.ProcessState.ExitCode() != freshCode {
		t.Errorf("zsh standby of another environment differs from the replay (exit %d vs %d):\nonly in the replay: %q\nonly in the standby: %q", cmd.ProcessState.ExitCode(), freshCode, missing, extra)
	}
	if stderr != freshErr {
		t.Errorf("standby stderr = %q, want the replay's %q", stderr, freshErr)
	}
	if strings.Contains(stdout, "secret-of-first") || strings.Contains(stderr, "secret-of-first") {
		t.Errorf("the second request sees the first's values:\n%s%s", stdout, stderr)
	}
	if !strings.Contains(stdout, "export ODD=") || !strings.Contains(stdout, "ONLY_SECOND=s") {
		t.Errorf("probe output lacks the second request's variables:\n%s", stdout)
	}
}

// sortedLines returns s's lines sorted.
func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestZshPassedThroughNames: zsh's own names, lower-case ones and bash's
// stay part of a zsh launch; their near misses pass through.
func TestZshPassedThroughNames(t *testing.T) {
	home := t.TempDir()
	snap := zshLaunch(t, newTestCache(t, newTestProcs(t)), home, "true", map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}).Snapshot
	passes := []string{"TRACE_ID", "HOMEBREW_PREFIX", "X", "NVM_DIR", "ZZ"}
	stays := []string{"HOME", "PATH", "path", "FPATH", "fpath", "ZDOTDIR", "ZSH_VERSION", "ZLE_RPROMPT_INDENT", "PROMPT", "PS1", "RPROMPT", "SAVEHIST",
		"HISTFILE", "WORDCHARS", "KEYTIMEOUT", "NULLCMD", "READNULLCMD", "LANG", "LC_ALL", "TERM", "IFS", "SECONDS", "RANDOM", "LINENO", "SHLVL",
		"PWD", "OLDPWD", "TMPPREFIX", "WATCH", "CDPATH", "MANPATH", "MODULE_PATH", "PSVAR", "TIMEFMT", "REPORTTIME", "USERNAME", "trace_id", "BASH_ENV", "A-B"}
	env := map[string]string{}
	for _, name := range append(slices.Clone(passes), stays...) {
		env[name] = "v"
	}
	delete(env, "ZDOTDIR") // which would keep every name in the launch
	passed := snap.PassedThrough(env)
	for _, name := range passes {
		if !passed[name] {
			t.Errorf("PassedThrough() leaves out %s, which zsh gives no meaning", name)
		}
	}
	for _, name := range stays {
		if passed[name] {
			t.Errorf("PassedThrough() has %s, which zsh reads or sets itself", name)
		}
	}
	env["ZDOTDIR"] = "/z"
	if got := snap.PassedThrough(env); len(got) != 0 {
		t.Errorf("PassedThrough() with a ZDOTDIR of the request's own = %v, want none", slices.Sorted(maps.Keys(got)))
	}
}
