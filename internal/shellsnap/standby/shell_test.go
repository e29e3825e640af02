package standby

import (
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/shellsnap/shellsnaptest"

	snapexec "github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// standbyRun is standbyCode for a command that must succeed.
func standbyRun(t *testing.T, in shellsnap.ReplayInput, dir, script string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, code := standbyCode(t, in, dir, script)
	if code != 0 {
		t.Fatalf("standby %q: exit %d\nstdout:\n%s\nstderr:\n%s", script, code, stdout, stderr)
	}
	return stdout, stderr
}

// TestStandbyMatchesReplay runs probes through a fresh replay and through a
// standby of the same snapshot: the user's command must not tell them apart.
func TestStandbyMatchesReplay(t *testing.T) {
	profiles := map[string]string{
		"rich": shellsnaptest.RichProfile,
		// The options act on the user's command only, in both: nothing of
		// the restore or the wait trips them.
		"errexit and nounset": "set -o errexit -o nounset -o pipefail\nf() { echo f; }\n",
		// What the standby leaves to its go-ahead: traps (a DEBUG trap would
		// run on the wait), disabled builtins, a function named builtin, $_;
		// and what a real profile does besides.
		"adversarial": `trap 'echo debug >/dev/null' DEBUG
trap 'echo bye' EXIT
trap '' HUP
enable -n kill eval
builtin() { command builtin "$@"; }
readonly RO=1
declare -A MAP=([k]=v)
declare -ia NUMS=(1 2 3)
PROMPT_COMMAND='echo prompt'
shopt -s extglob
ext() { case $1 in @(a|b)) echo ab;; esac; }
shopt -u extglob
function a=b { echo ab; }
mkdir -p "$HOME/work" && cd "$HOME/work"
set +B
: last-word
`,
	}
	probes := map[string]string{
		"fidelity": shellsnaptest.FidelityProbe,
		"options":  "echo \"$-\"; set -o | awk '$2==\"on\"{print $1}'",
		"failing":  "f; false; echo not reached",
		"unset":    "echo ${NOT_SET_ANYWHERE}; echo not reached",
		"errors":   "no_such_command_here; cd /no/such/dir; echo \"line $LINENO\"",
		// $SECONDS counts whole seconds of the wall clock: one that ticks
		// between the start (a standby's go-ahead) and the echo makes it 1
		// however little time passed, in either run; its tens are 0 in both
		// unless the standby kept its own start.
		"state": "echo \"tens=${SECONDS%?} args=$# zero=${0##*/}\"; declare -p __CODEX_SHELL_SNAPSHOT_SCRIPT 2>&1; compgen -v | grep -c '^__CODEX' || true",
		"exit":  "echo before; exit 3",
		"rest":  "echo \"$_\"; trap -p; enable -n; declare -p RO MAP NUMS PROMPT_COMMAND 2>&1; pwd; echo {a,b}; type -t builtin; echo \"$BASH_EXECUTION_STRING\"",
	}
	for pname, profile := range profiles {
		home := t.TempDir()
		writeFile(t, filepath.Join(home, ".bash_profile"), profile)
		env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "DROP_ME": "x", "LANG": "C"}
		c := newTestCache(t, newTestProcs(t))
		for name, probe := range probes {
			t.Run(pname+"/"+name, func(t *testing.T) {
				l := shellsnap.Launch{Argv: []string{bash, "-lc", probe}, Cwd: home, Env: maps.Clone(env)}
				p, err := c.Prepare(context.Background(), bashRequest("standby"), l)
				if err != nil || p.Receipt.Outcome != shellsnap.OutcomeUsed {
					t.Fatalf("Prepare() = %+v, %v; want used", p.Receipt, err)
				}
				in := shellsnap.ReplayInput{Snapshot: p.Snapshot, Shell: "bash", Command: l.Argv, Env: l.Env}
				argv, replayEnv := shellsnap.Replay(in)
				fresh, freshErr, freshCode := runCode(t, argv, home, replayEnv)
				stdout, stderr, code := standbyCode(t, in, home, probe)
				if missing, extra := lineDiff(fresh, stdout); len(missing)+len(extra) > 0 || code != freshCode {
					t.Errorf("standby stdout differs from the replay's (exit %d vs %d):\nonly in the replay: %q\nonly in the standby: %q", code, freshCode, missing, extra)
				}
				if stderr != freshErr {
					t.Errorf("standby stderr = %q, want the replay's %q", stderr, freshErr)
				}
			})
		}
	}
}

// runShell runs argv in dir with exactly env and returns the ended command
// and its output. With a message it runs it as a standby: message is written
// to its fd 3 once the standby had time to restore and wait.
func runShell(t *testing.T, argv []string, dir string, env []string, message []byte) (cmd *exec.Cmd, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	// As exec.Held gives them: the go-ahead on fd 3, and fd 4, which the
	// standby closes once it waits.
	var w, ready, readyW *os.File
	if message != nil {
		r, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if ready, readyW, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
		defer ready.Close()
		cmd.ExtraFiles, w = []*os.File{r, readyW}, pw
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Start()
	if readyW != nil {
		readyW.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if w != nil {
		_ = ready.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, ready); err != nil {
			t.Errorf("the standby did not close its fd 4: %v", err)
		}
		_, _ = w.Write(message)
		w.Close()
	}
	_ = cmd.Wait()
	return cmd, out.String(), errOut.String()
}

// runCode runs argv and returns its output and exit code.
func runCode(t *testing.T, argv []string, dir string, env map[string]string) (stdout, stderr string, code int) {
	t.Helper()
	cmd, stdout, stderr := runShell(t, argv, dir, envPairs(env), nil)
	return stdout, stderr, cmd.ProcessState.ExitCode()
}

// standbyCode runs the standby of in with script's go-ahead and returns its
// output and exit code.
func standbyCode(t *testing.T, in shellsnap.ReplayInput, dir, script string) (stdout, stderr string, code int) {
	t.Helper()
	argv, env, ok := standbyCommand(in)
	if !ok {
		t.Fatalf("standbyCommand(%q) = _, _, false, want a standby", in.Command)
	}
	cmd, stdout, stderr := runShell(t, argv, dir, envPairs(env), goAhead(in, script))
	return stdout, stderr, cmd.ProcessState.ExitCode()
}

func TestStandbyHidesState(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bashrc"), "hidden_helper() { echo helper; }\nset -o allexport\n")
	snap := captureLogin(t, home)
	env := loginEnv(home)
	const fdProbe = "echo /proc/$$/fd/*\necho ---env\n"
	in := shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{bash, "-lc", fdProbe + "env\necho ---set\nset\necho ---end\n"}, Env: env}
	stdout, stderr := standbyRun(t, in, home, in.Command[2])
	plain, err := exec.Command(bash, "-c", fdProbe).Output()
	if err != nil {
		t.Fatal(err)
	}
	wantFDs, _, _ := strings.Cut(string(plain), "---env\n")
	fds, rest, _ := strings.Cut(stdout, "---env\n")
	if fds, wantFDs := descriptorNumbers(fds), descriptorNumbers(wantFDs); !slices.Equal(fds, wantFDs) {
		t.Errorf("standby: descriptors of the shell = %q, want %q as without a replay (fds 3 and 4 closed)", fds, wantFDs)
	}
	if !strings.HasSuffix(rest, "---end\n") || stderr != "" {
		t.Fatalf("standby probe = stdout %q, stderr %q, want output ending in ---end and no stderr", stdout, stderr)
	}
	for line := range strings.SplitSeq(rest, "\n") {
		if strings.HasPrefix(line, "__SNAPEXEC_") || strings.HasPrefix(line, "__snapexec_") || strings.HasPrefix(line, "BASH_ENV=") {
			t.Errorf("standby: user command sees %.80q", line)
		}
	}
}

// TestStandbyReportsBrokenState: a piece bash cannot read back (a function
// corrupted in its capture, as a shell bug would print it) is left out of a
// standby as it is of a replay: the same output, no error, and the
// command runs.
func TestStandbyReportsBrokenState(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bash_profile"), "broken_fn() { echo BREAK_ME; }\nafter_fn() { echo after; }\n")
	real := shellsnap.NewCapturer(newTestProcs(t))
	corrupt := func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
		out, err := real(ctx, argv, cwd, env, sb, newSession)
		return bytes.Replace(out, []byte("echo BREAK_ME"), []byte("if then fi"), 1), err
	}
	c, err := shellsnap.New(shellsnap.Options{Capture: corrupt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const script = "after_fn; type -t broken_fn || echo no broken_fn"
	l := shellsnap.Launch{Argv: []string{bash, "-lc", script}, Cwd: home, Env: loginEnv(home)}
	p, err := c.Prepare(context.Background(), bashRequest("broken"), l)
	if err != nil || p.Receipt.Outcome != shellsnap.OutcomePartial {
		t.Fatalf("Prepare() = %+v, %v; want partial", p.Receipt, err)
	}
	in := shellsnap.ReplayInput{Snapshot: p.Snapshot, Shell: "bash", Command: l.Argv, Env: l.Env}
	argv, env := shellsnap.Replay(in)
	fresh, freshErr, _ := runCode(t, argv, home, env)
	stdout, stderr := standbyRun(t, in, home, script)
	if want := "after\nno broken_fn\n"; stdout != want || stdout != fresh || stderr != "" || freshErr != "" {
		t.Fatalf("standby of a partial snapshot = stdout %q, stderr %q; replay = stdout %q, stderr %q; want both %q and no stderr", stdout, stderr, fresh, freshErr, want)
	}
}

func TestStandbyServesOnlyPlainBashLaunches(t *testing.T) {
	snap := snapshotOf(t, "")
	tests := []struct {
		name string
		in   shellsnap.ReplayInput
	}{
		{"zsh with a snapshot of bash", shellsnap.ReplayInput{Snapshot: snap, Shell: "zsh", Command: []string{"/bin/zsh", "-lc", "true"}}},
		{"arguments after the script", shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"/bin/bash", "-lc", "true", "zero"}}},
		{"sandbox wrapper", shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"wrap", "/bin/bash", "-lc", "true"}, ShellStart: 1}},
		{"SECONDS from the environment", shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"/bin/bash", "-lc", "true"}, Env: map[string]string{"SECONDS": "5"}}},
		{"no snapshot", shellsnap.ReplayInput{Shell: "bash", Command: []string{"/bin/bash", "-lc", "true"}}},
		{"xtrace in the snapshot", shellsnap.ReplayInput{Snapshot: snapshotOf(t, "set -o xtrace\n"), Shell: "bash", Command: []string{"/bin/bash", "-lc", "true"}}},
		{"verbose in the snapshot", shellsnap.ReplayInput{Snapshot: snapshotOf(t, "set -o verbose\n"), Shell: "bash", Command: []string{"/bin/bash", "-lc", "true"}}},
		{"set -x in the script", shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"/bin/bash", "-lc", "set -euxo pipefail; make"}}},
		{"set -v in the script", shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"/bin/bash", "-lc", "cd src && set -v"}}},
		{"a script longer than one argument may be", shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"/bin/bash", "-lc", strings.Repeat("#", 127<<10+1)}}},
		{"set -o xtrace in the script", shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"/bin/bash", "-lc", "set -o xtrace"}}},
	}
	for _, tt := range tests {
		if _, _, ok := standbyCommand(tt.in); ok {
			t.Errorf("standbyCommand(%s) = _, _, true, want false", tt.name)
		}
	}
	for _, script := range []string{"true", "set -euo pipefail; make test", "echo set -e"} {
		if _, _, ok := standbyCommand(shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{"/bin/bash", "-lc", script}}); !ok {
			t.Errorf("standbyCommand(bash -lc %q) = _, _, false, want true", script)
		}
	}
}

// TestStandbyServesAnotherEnvironment: a standby started for one request
// runs another whose environment differs only in variables the replay
// passes through, exactly as a fresh replay of that request, and shows
// nothing of the first request's values, not even in its own
// /proc/PID/environ.
func TestStandbyServesAnotherEnvironment(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bash_profile"), shellsnaptest.RichProfile+`HIST_LIKE=1
export KEPT_BY_PROFILE
declare -i COUNTER=3
readonly LOCKED=1
shell_only=v
export ATTR_LATER; declare -l ATTR_LATER
`)
	base := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "DROP_ME": "x", "LANG": "C", "KEPT_BY_PROFILE": "k", "ATTR_LATER": "Mixed"}
	c := newTestCache(t, newTestProcs(t))
	const probe = shellsnaptest.FidelityProbe + `
echo "--- passed"; declare -p TRACE_ID ONLY_FIRST ONLY_SECOND ODD 2>&1
echo "--- export"; export -p | grep -v -e ' _=' -e SHLVL
echo "--- environ"; tr '\0' '\n' </proc/$$/environ | grep -c secret-of-first`
	request := func(extra map[string]string) shellsnap.ReplayInput {
		env := maps.Clone(base)
		maps.Copy(env, extra)
		l := shellsnap.Launch{Argv: []string{bash, "-lc", probe}, Cwd: home, Env: env}
		p, err := c.Prepare(context.Background(), bashRequest("env"), l)
		if err != nil || p.Receipt.Outcome != shellsnap.OutcomeUsed {
			t.Fatalf("Prepare() = %+v, %v; want used", p.Receipt, err)
		}
		return shellsnap.ReplayInput{Snapshot: p.Snapshot, Shell: "bash", Command: l.Argv, Env: env}
	}
	first := request(map[string]string{"TRACE_ID": "secret-of-first-1", "ONLY_FIRST": "secret-of-first-2"})
	second := request(map[string]string{"TRACE_ID": "t-2", "ONLY_SECOND": "s", "ODD": "a'b\"c\\\n$(x)\x01\xff"})

	key := func(in shellsnap.ReplayInput) launchKey {
		_, env := shellsnap.Replay(in)
		return keyOf(in.Snapshot, snapexec.Spec{Argv: []string{bash}, Dir: home, Env: envPairs(env)}, in.Snapshot.PassedThrough(in.Env))
	}
	if key(first) != key(second) {
		t.Fatalf("launches that differ only in passed-through variables have two keys")
	}
	for name, value := range map[string]string{"PATH": "/bin", "EDITOR": "nano", "DROP_ME": "y", "LANG": "C.UTF-8",
		"ATTR_LATER": "x", "COUNTER": "1", "LOCKED": "2", "shell_only": "w", "HIST_LIKE": "2", "BASH_ENV": "/dev/null", "SHELLOPTS": "xtrace", "BASH_FUNC_f%%": "() { :; }", "A-B": "1"} {
		other := request(map[string]string{name: value})
		if key(other) == key(first) {
			t.Errorf("a launch with %s=%q shares the key of one without", name, value)
		}
	}

	argv, env := shellsnap.Replay(second)
	fresh, freshErr, freshCode := runCode(t, argv, home, env)
	sArgv, sEnv, ok := standbyCommand(first)
	if !ok {
		t.Fatal("standbyCommand() = _, _, false, want a standby")
	}
	cmd, stdout, stderr := runShell(t, sArgv, home, envPairs(sEnv), goAhead(second, probe))
	// The one line a standby may differ in: its own process's start-up
	// environment lacks the passed-through variables; it must never hold
	// the first request's.
	fresh = strings.Replace(fresh, "--- environ\n0\n", "--- environ\n", 1)
	stdout = strings.Replace(stdout, "--- environ\n0\n", "--- environ\n", 1)
	if missing, extra := lineDiff(fresh, stdout); len(missing)+len(extra) > 0 || cmd.ProcessState.ExitCode() != freshCode {
		t.Errorf("standby of another environment differs from the replay (exit %d vs %d):\nonly in the replay: %q\nonly in the standby: %q", cmd.ProcessState.ExitCode(), freshCode, missing, extra)
	}
	if stderr != freshErr {
		t.Errorf("standby stderr = %q, want the replay's %q", stderr, freshErr)
	}
	if strings.Contains(stdout, "secret-of-first") || strings.Contains(stderr, "secret-of-first") {
		t.Errorf("the second request sees the first's values:\n%s%s", stdout, stderr)
	}
	if !strings.Contains(stdout, "declare -x ODD=") || !strings.Contains(stdout, "ONLY_SECOND=s") {
		t.Errorf("probe output lacks the second request's variables:\n%s", stdout)
	}
}

// TestPassedThroughNames: bash's own names and their families stay part of
// a launch; their near misses pass through.
func TestPassedThroughNames(t *testing.T) {
	home := t.TempDir()
	snap := captureLogin(t, home)
	passes := []string{"TRACE_ID", "HOMEBREW_PREFIX", "PATHEXT", "LCOV", "PS", "TZDATA", "IFSX", "ENVIRONMENT", "OLDPWDS", "lang", "path", "X"}
	stays := []string{"HOME", "PATH", "LC_ALL", "LC_CTYPE", "LANG", "TZ", "IFS", "ENV", "BASH_ENV", "BASH_XTRACEFD", "BASHOPTS", "SHELLOPTS", "POSIXLY_CORRECT",
		"PS1", "PS4", "PROMPT_COMMAND", "HISTFILE", "HISTSIZE", "TERM", "COMP_WORDBREAKS", "CDPATH", "GLOBIGNORE", "OPTIND", "PWD", "OLDPWD", "SHLVL", "_",
		"SECONDS", "RANDOM", "auto_resume", "histchars", "__SNAPEXEC_BASH_ENV", "__CODEX_SHELL_SNAPSHOT_SCRIPT", "BASH_FUNC_f%%", "A-B", "1X", "MAILPATH", "TMOUT"}
	env := map[string]string{}
	for _, name := range append(slices.Clone(passes), stays...) {
		env[name] = "v"
	}
	delete(env, "BASH_ENV") // which would keep every name in the launch
	delete(env, "__SNAPEXEC_BASH_ENV")
	passed := snap.PassedThrough(env)
	for _, name := range passes {
		if !passed[name] {
			t.Errorf("PassedThrough() leaves out %s, which bash gives no meaning", name)
		}
	}
	for _, name := range stays {
		if passed[name] {
			t.Errorf("PassedThrough() has %s, which bash reads or sets itself", name)
		}
	}
	env["BASH_ENV"] = "/dev/null"
	if got := snap.PassedThrough(env); len(got) != 0 {
		t.Errorf("PassedThrough() with a BASH_ENV of the request's own = %v, want none", slices.Sorted(maps.Keys(got)))
	}
}
