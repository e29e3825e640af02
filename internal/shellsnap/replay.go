package shellsnap

import (
	"maps"
	"slices"
	"strings"
)

// ReplayInput is what a replay needs: the snapshot, the shell name, the full
// prepared command, where the shell sits in it, and the prepared env.
type ReplayInput struct {
	// Snapshot is the parsed capture to replay.
	Snapshot *Snapshot
	// Shell is the shell's name: "bash", "zsh" or "sh".
	Shell string
	// Command is the prepared command, ending with [shell, "-lc", script, args...];
	// a sandbox wrapper may precede the shell.
	Command []string
	// ShellStart is the index of the shell in Command.
	ShellStart int
	// Env is the prepared environment of the launch.
	Env map[string]string
}

// Replay rewrites a login-shell launch so that the shell restores the
// snapshot from its restore file where a login shell runs its profile, and
// then runs the user's script (docs/design/snapshots.md#replay). It returns
// the new command and environment and modifies none of its inputs. A shell
// other than bash, zsh and sh, or a command without a script at
// ShellStart+2, is returned as is.
//
// bash runs the user's script as its own login shell would, "bash
// --noprofile -lc script", with BASH_ENV naming the restore file, which bash
// runs where a login shell runs BASH_ENV, after the profile it skips. So $0,
// LINENO, the error messages' line numbers, BASH_EXECUTION_STRING,
// login_shell, logout and the last command run in the shell's place are a
// login shell's. The environment is the request's: the restore applies the
// profile's changes to it, and gives the request's own BASH_ENV (if any)
// back from __SNAPEXEC_BASH_ENV.
//
// zsh runs the script as its login shell would too, unchanged: ZDOTDIR names
// the restore directory, whose .zshenv and .zlogin zsh runs in place of the
// user's, and the request's ZDOTDIR comes in __SNAPEXEC_ZDOTDIR.
func Replay(in ReplayInput) (command []string, env map[string]string) {
	command = slices.Clone(in.Command)
	known := in.Shell == "bash" || in.Shell == "zsh" || in.Shell == "sh"
	if in.Snapshot == nil || !known || in.ShellStart < 0 || in.ShellStart+2 >= len(command) {
		return command, maps.Clone(in.Env)
	}
	switch in.Shell {
	case "zsh":
		return command, restoreEnv(in, "ZDOTDIR", userZdotdirVar)
	case "sh":
		// dash runs no startup file for sh -c, so the restore is sourced
		// on the script's first line: its line numbers stay the script's.
		// command keeps an error in the file from ending the shell.
		command[in.ShellStart+1] = "-c"
		command[in.ShellStart+2] = "command . " + quote(in.Snapshot.restore) + "; " + command[in.ShellStart+2]
		return command, restoreEnv(in, "", "")
	}
	command = append(slices.Clone(in.Command[:in.ShellStart+1]), "--noprofile")
	return append(command, in.Command[in.ShellStart+1:]...), restoreEnv(in, "BASH_ENV", userBashEnvVar)
}

// restoreEnv is the environment of a replay of in: in.Env without the
// replay's own variables and, when carrier is not empty, with carrier
// naming the restore (the request's own value of it moved to inner, where
// the restore takes it back from).
func restoreEnv(in ReplayInput, carrier, inner string) map[string]string {
	env := maps.Clone(in.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.DeleteFunc(env, func(name, _ string) bool { return strings.HasPrefix(name, internalEnvPrefix) })
	if carrier != "" {
		if v, ok := env[carrier]; ok {
			env[inner] = v
		}
		env[carrier] = in.Snapshot.restore
	}
	return env
}
