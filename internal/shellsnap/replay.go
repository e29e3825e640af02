package shellsnap

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// ReplayInput is what a replay needs: the snapshot, the shell name, the full
// prepared command, where the shell sits in it, the prepared env, the request's
// own env, and the env the capture started with.
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
	// RequestEnv is the env of the request itself.
	RequestEnv map[string]string
	// CaptureEnv is the environment the capture shell started with. nil gives the
	// reference's merge: request variables always win and nothing is unset.
	CaptureEnv map[string]string
}

// Replay rewrites a login-shell launch so that a plain shell restores the
// snapshot's state before it runs the user's script (SHELL-SNAPSHOTS.md section
// 7). It returns the new command and environment and modifies none of its inputs.
// A shell other than bash, zsh and sh, or a command without a script at
// ShellStart+2, is returned as is.
func Replay(in ReplayInput) (command []string, env map[string]string) {
	command = append([]string(nil), in.Command...)
	flag, prefix, ok := replayStartup(in.Shell)
	if in.Snapshot == nil || !ok || in.ShellStart < 0 || in.ShellStart+2 >= len(command) {
		return command, maps.Clone(in.Env)
	}
	if in.Snapshot.restore != "" {
		return replayFromFile(in)
	}

	env = replayEnv(in)
	names := addStateChunks(env, in.Snapshot.State)

	script := command[in.ShellStart+2]
	if in.Shell == "zsh" {
		// zsh parses a whole -c string before running any of it, so aliases and
		// options restored by the eval would not reach a script that follows it
		// directly. A second eval parses the script after the restore, as a real
		// login shell parses it after its profile.
		script = "eval " + shellQuote(script)
	}
	var b strings.Builder
	b.WriteString(prefix)
	writeRestore(&b, in.Shell, names)
	b.WriteString("\n")
	b.WriteString(script)

	command[in.ShellStart+1] = flag
	command[in.ShellStart+2] = b.String()
	return command, env
}

// addStateChunks puts state into env as the chunk variables (section 7.1)
// and returns their names.
func addStateChunks(env map[string]string, state string) []string {
	chunks := chunkState(state, MaxSnapshotEnvValueBytes)
	names := make([]string, len(chunks))
	for i, chunk := range chunks {
		names[i] = StateEnvPrefix + strconv.Itoa(i)
		env[names[i]] = chunk
	}
	return names
}

// writeRestore writes the line that unsets the chunk variables names and
// evaluates the state they carry, silently, with a notice on stderr if that
// fails. The line is not ended.
func writeRestore(b *strings.Builder, shell string, names []string) {
	b.WriteString("if ! ")
	if shell == "sh" {
		// eval is a special builtin: dash exits at a syntax error in its argument,
		// even inside an if, which would skip the user's script. command removes
		// that special property.
		b.WriteString("command ")
	}
	b.WriteString(`eval "unset ` + strings.Join(names, " ") + "\n")
	for _, name := range names {
		b.WriteString("${" + name + "}")
	}
	b.WriteString(`" >/dev/null; then printf 'failed to restore shell snapshot\n' >&2; fi`)
}

// replayStartup returns the flag that replaces "-lc" and the line that undoes its
// side effect. bash -p skips BASH_ENV and ENV, and privileged mode goes off at
// once; zsh -f skips every startup file after /etc/zshenv, and RCS comes back on
// so that the option reads as it does in a shell started normally.
func replayStartup(shell string) (flag, prefix string, ok bool) {
	switch shell {
	case "bash":
		return "-pc", "set +o privileged\n", true
	case "zsh":
		return "-fc", "setopt RCS\n", true
	case "sh":
		return "-c", "", true
	}
	return "", "", false
}

// replayEnv merges the prepared env, the snapshot's env and the request's env
// (SHELL-SNAPSHOTS.md section 7.1): snapshot values beat inherited and policy
// values, and request values beat snapshot values.
//
// With a CaptureEnv, a request value beats the snapshot only when it differs from
// the value the capture started with: a client that always sends the PATH it
// sent for the capture keeps the PATH its profile built from it. Likewise a
// variable that the capture started with and the profile unset is unset here too,
// unless the request sends a different value. Variables that Parse filtered out
// (policy, proxy, PWD, ...) were not unset by the profile and keep their values.
func replayEnv(in ReplayInput) map[string]string {
	env := maps.Clone(in.Env)
	if env == nil {
		env = make(map[string]string)
	}
	// Parse drops SHLVL and _; a hand-built snapshot must not bring them back.
	profile := maps.Clone(in.Snapshot.Env)
	delete(profile, "SHLVL")
	delete(profile, "_")
	maps.Copy(env, profile)

	overrides := make(map[string]string, len(in.RequestEnv))
	for name, value := range in.RequestEnv {
		if prepared, ok := in.Env[name]; ok {
			value = prepared
		}
		overrides[name] = value
	}
	for name, value := range overrides {
		if _, ok := profile[name]; ok && unchangedSinceCapture(in.CaptureEnv, name, value) {
			continue
		}
		env[name] = value
	}
	if in.CaptureEnv != nil && in.Snapshot.Captured != nil {
		for name, value := range in.CaptureEnv {
			if _, ok := profile[name]; ok || in.Snapshot.Captured[name] {
				continue
			}
			if override, ok := overrides[name]; ok && override != value {
				continue
			}
			delete(env, name)
		}
	}
	envpolicy.DropNeverInherited(env)
	// Only this replay's chunks may reach the shell: a stale or forged index
	// would not be unset and would leak into the user's command.
	maps.DeleteFunc(env, func(name, _ string) bool { return strings.HasPrefix(name, StateEnvPrefix) })
	if in.Shell == "bash" {
		// bash -p does not import exported functions from the environment, so
		// a BASH_FUNC_name%% entry would pass through as an opaque string
		// beside the exported function the state restores: the user's
		// command would see it twice. The state is the one source of functions.
		maps.DeleteFunc(env, func(name, _ string) bool {
			return strings.HasPrefix(name, "BASH_FUNC_") && strings.HasSuffix(name, "%%")
		})
	}
	return env
}

// unchangedSinceCapture reports whether value is what the capture started with
// for name.
func unchangedSinceCapture(captureEnv map[string]string, name, value string) bool {
	if captureEnv == nil {
		return false
	}
	captured, ok := captureEnv[name]
	return ok && captured == value
}

// chunkState splits state into pieces of at most limit bytes, cut on UTF-8
// character boundaries, so that each fits one environment string (Linux limits
// one to 128 KiB). It always returns at least one piece.
func chunkState(state string, limit int) []string {
	var chunks []string
	for len(state) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(state[cut]) {
			cut--
		}
		if cut == 0 {
			// Not UTF-8 (Parse rejects that); cut anywhere rather than loop.
			cut = limit
		}
		chunks = append(chunks, state[:cut])
		state = state[cut:]
	}
	return append(chunks, state)
}

// shellQuote quotes s as one single-quoted shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// replayFromFile is Replay of a snapshot with a restore file: bash runs the
// user's script as its own login shell would, "bash --noprofile -lc
// script", with BASH_ENV naming the restore file, which bash runs where a
// login shell runs BASH_ENV, after the profile it skips. So $0, LINENO, the
// error messages' line numbers, BASH_EXECUTION_STRING, login_shell, logout
// and the last command run in the shell's place are a login shell's. The
// environment is the request's: the restore applies the profile's changes
// to it, and gives the request's own BASH_ENV (if any) back from
// __SNAPEXEC_BASH_ENV.
//
// zsh runs the script as its login shell would too, unchanged: ZDOTDIR names
// the restore directory, whose .zshenv and .zlogin zsh runs in place of the
// user's, and the request's ZDOTDIR comes in __SNAPEXEC_ZDOTDIR.
func replayFromFile(in ReplayInput) ([]string, map[string]string) {
	env := maps.Clone(in.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.DeleteFunc(env, func(name, _ string) bool { return strings.HasPrefix(name, internalEnvPrefix) })
	carry := func(name, inner string) {
		if v, ok := env[name]; ok {
			env[inner] = v
		}
		env[name] = in.Snapshot.restore
	}
	switch in.Shell {
	case "zsh":
		carry("ZDOTDIR", userZdotdirVar)
		return slices.Clone(in.Command), env
	case "sh":
		// dash runs no startup file for sh -c, so the restore is sourced
		// on the script's first line: its line numbers stay the script's.
		// command keeps an error in the file from ending the shell.
		command := slices.Clone(in.Command)
		command[in.ShellStart+1] = "-c"
		command[in.ShellStart+2] = "command . " + shellQuote(in.Snapshot.restore) + "; " + command[in.ShellStart+2]
		return command, env
	}
	carry("BASH_ENV", userBashEnvVar)
	command := append(slices.Clone(in.Command[:in.ShellStart+1]), "--noprofile")
	return append(command, in.Command[in.ShellStart+1:]...), env
}
