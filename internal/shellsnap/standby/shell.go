package standby

import (
	"maps"
	"strings"

	"github.com/snapexec/snapexec/internal/shellsnap"
)

// maxScript is the longest script a standby runs: Linux's limit on
// one argument (128 KiB) less room for Replay's restore line.
const maxScript = 128<<10 - 1<<10

// standbyCommand returns the command and environment of a standby shell
// for the launch in (docs/design/standby.md#the-shell): a shell started
// ahead of the request that restores in.Snapshot at once, exactly as
// Replay's command does but for the set -o options, and then waits on its
// fd 3 for the go-ahead of goAhead, which carries the options and the
// user's script. It is Replay's command for in with the options left out of
// the state and shellsnap.StandbyWaitLine as the script: so its environment is Replay's but
// for BASH_ENV, which names the standby's restore file, and a standby
// serves exactly the launches whose Replay environment equals it; and the
// eval of the user's script is on the line where Replay's command has the
// script, so LINENO and the line numbers of error messages are Replay's.
//
// ok is false for launches a standby does not serve (serves).
func standbyCommand(in shellsnap.ReplayInput) (command []string, env map[string]string, ok bool) {
	if !serves(in) {
		return nil, nil, false
	}
	// The variables a replay only passes through come with the go-ahead:
	// a standby serves every launch that differs only there, and never
	// shows one request's values to another.
	passed := in.Snapshot.PassedThrough(in.Env)
	in.Env = maps.Clone(in.Env)
	maps.DeleteFunc(in.Env, func(name, _ string) bool { return passed[name] })
	in.Snapshot = in.Snapshot.ForStandby()
	wait := shellsnap.StandbyWaitLine
	if in.Shell == "zsh" {
		wait = shellsnap.StandbyWaitLineZsh
	}
	in.Command = []string{in.Command[0], "-lc", wait}
	command, env = shellsnap.Replay(in)
	return command, env, true
}

// serves reports whether a standby can serve the launch in. It does not
// serve a shell other than bash and zsh, a sandbox wrapper before the shell,
// arguments after the script (the standby's $0 and positional parameters
// are its own), SECONDS in the environment, and traced launches.
//
// What still tells a standby from Replay's command:
//   - Nesting: xtrace marks the script's commands "++", not "+", since they
//     run in an eval. So a standby never serves a snapshot with xtrace or
//     verbose set, nor a script that mentions xtrace or verbose or runs set
//     with an x or v flag. A profile function or a sourced file that turns
//     xtrace on still traces one level deeper.
//   - The process: in an eval bash never runs the script's last program in
//     its own place, as it does at the end of a -c string; tailScript
//     writes that exec where bash would have done it, and refuses the
//     scripts it cannot be sure of. /proc/PID/cmdline and
//     BASH_EXECUTION_STRING show the standby's command, not the script, and
//     the exec'd program finds _ first in its environment rather than last.
//     SECONDS restarts at the go-ahead, as it starts with a shell.
func serves(in shellsnap.ReplayInput) bool {
	if in.Snapshot == nil || in.Shell != "bash" && in.Shell != "zsh" || !in.Snapshot.StandbyReady(in.Shell) || in.ShellStart != 0 || len(in.Command) != 3 {
		return false
	}
	if len(in.Command[2]) > maxScript {
		// Replay's command would not start: Linux refuses an argument that
		// long (MAX_ARG_STRLEN). A standby must not make it work sometimes.
		return false
	}
	if _, set := in.Env["SECONDS"]; set {
		// bash starts SECONDS from the environment's value; the go-ahead
		// restarts it from 0.
		return false
	}
	script := in.Command[2]
	if in.Shell == "zsh" {
		// zsh's option names ignore case and underscores (setopt X_TRACE).
		script = strings.ToLower(strings.ReplaceAll(script, "_", ""))
	}
	return !shellsnap.StandbyTraced(script)
}

// goAhead is the message that makes a standby shell of in's snapshot run
// script for the launch in: SECONDS restarts, the variables the standby
// started without are exported, BASH_EXECUTION_STRING (ZSH_EXECUTION_STRING) becomes the script, the part of
// the state that would have acted on the wait is restored
// (shellsnap.Snapshot.GoAhead), then the script runs, in one eval, parsed
// after the restore as Replay's command parses it.
func goAhead(in shellsnap.ReplayInput, script string) []byte {
	var run strings.Builder
	// One line, so that the script's first line is the eval's first, as in
	// Replay's command.
	run.WriteString("SECONDS=0; " + in.Snapshot.GoAhead(in.Env, script))
	run.WriteString(script)
	if in.Shell == "zsh" {
		return shellsnap.StandbyMessageZsh(run.String())
	}
	return shellsnap.StandbyMessage(run.String())
}

// quote quotes s as one single-quoted shell word, as Replay quotes.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
