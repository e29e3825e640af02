package shellsnap

import (
	"regexp"
	"strings"
)

// standbyScriptVar carries a standby's script from its go-ahead to the eval
// that runs it; it is unset before the script runs.
const standbyScriptVar = "__CODEX_SHELL_SNAPSHOT_SCRIPT"

// maxStandbyScript is the longest script a standby runs: Linux's limit on
// one argument (128 KiB) less room for Replay's restore line.
const maxStandbyScript = 128<<10 - 1<<10

// optionsHeader starts the bash state's last section, its set -o options.
const optionsHeader = "\n# setopts "

// Standby returns the command and environment of a standby shell for the
// launch in: a shell started ahead of the request that restores in.Snapshot
// at once, exactly as Replay's command does but for the set -o options, and
// then waits on its fd 3 (exec.Held) for the go-ahead of StandbyMessage,
// which carries the options and the user's script. Its environment is
// Replay's but for the chunk variables, so a standby serves exactly the
// launches whose Replay environment equals it.
//
// ok is false for launches a standby does not serve: a shell other than bash,
// a sandbox wrapper before the shell, arguments after the script (the
// standby's $0 and positional parameters are its own), SECONDS in the
// environment, and traced launches (below).
//
// The user's script runs in an eval on the line where Replay's command has
// it, so LINENO and the line numbers of error messages are Replay's. What
// still tells a standby from Replay's command:
//   - Nesting: xtrace marks the script's commands "++", not "+", since they
//     run in an eval. So a standby never serves a snapshot with xtrace or
//     verbose set, nor a script that mentions xtrace or verbose or runs set
//     with an x or v flag. A profile function or a sourced file that turns xtrace
//     on still traces one level deeper.
//   - The process: in an eval bash never runs the script's last program in
//     its own place, as it does at the end of a -c string; StandbyScript
//     writes that exec where bash would have done it (tail.go), and refuses
//     the scripts it cannot be sure of. /proc/PID/cmdline and
//     BASH_EXECUTION_STRING show the standby's command, not the script, and
//     the exec'd program finds _ first in its environment rather than last.
//     SECONDS restarts at the go-ahead, as it starts with a shell.
func Standby(in ReplayInput) (command []string, env map[string]string, ok bool) {
	if !StandbyServes(in) {
		return nil, nil, false
	}
	restore, _ := splitOptions(in.Snapshot.State)
	flag, prefix, _ := replayStartup(in.Shell)
	env = replayEnv(in)
	names := addStateChunks(env, restore)

	var b strings.Builder
	b.WriteString(prefix)
	writeRestore(&b, in.Shell, names)
	// The eval goes on the line after the restore, where Replay's command
	// puts the script, so that line numbers agree. The command words are
	// quoted, so that a restored alias cannot rewrite them. exec must be the
	// exec builtin itself: through "builtin", its redirection would be undone.
	b.WriteString("\n\\builtin . /dev/fd/3; \\exec 3<&-; ")
	b.WriteString(`\builtin eval "\builtin unset ` + standbyScriptVar + "; $" + standbyScriptVar + `"`)
	return []string{in.Command[0], flag, b.String()}, env, true
}

// StandbyServes reports whether a standby can serve the launch in (see
// Standby).
func StandbyServes(in ReplayInput) bool {
	if in.Snapshot == nil || in.Snapshot.restore != "" || in.Shell != "bash" || in.ShellStart != 0 || len(in.Command) != 3 {
		return false
	}
	if len(in.Command[2]) > maxStandbyScript {
		// Replay's command would not start: Linux refuses an argument that
		// long (MAX_ARG_STRLEN). A standby must not make it work sometimes.
		return false
	}
	if _, set := in.Env["SECONDS"]; set {
		// bash starts SECONDS from the environment's value; the go-ahead
		// restarts it from 0.
		return false
	}
	_, options := splitOptions(in.Snapshot.State)
	return !traced.MatchString(options) && !traced.MatchString(in.Command[2])
}

// traced matches what turns xtrace or verbose on, which a standby does not
// serve (see Standby). It may match more, such as a --verbose flag: such a
// launch is replayed as usual.
var traced = regexp.MustCompile(`\bset\s+[-+][[:alpha:]]*[xv]|xtrace|verbose`)

// StandbyMessage is the go-ahead that makes a standby shell of snap run
// script: SECONDS restarts, then snap's set -o options and the script run in
// one eval, parsed after the restore as Replay's command parses them.
func StandbyMessage(snap *Snapshot, script string) []byte {
	_, options := splitOptions(snap.State)
	var run strings.Builder
	run.WriteString("SECONDS=0; ")
	// One line, so that the script's first line is the eval's first, as in
	// Replay's command.
	for line := range strings.SplitSeq(options, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			run.WriteString(line + "; ")
		}
	}
	run.WriteString(script)
	return []byte(standbyScriptVar + "=" + shellQuote(run.String()) + "\n")
}

// splitOptions cuts a bash state before its set -o options section, which a
// standby applies only once its script has come: errexit or nounset must act
// on the user's command, never on the standby's own wait.
func splitOptions(state string) (restore, options string) {
	i := strings.LastIndex(state, optionsHeader)
	if i < 0 {
		return state, ""
	}
	return state[:i+1], state[i+1:]
}
