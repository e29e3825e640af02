package shellsnap

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// LoginTerminal reports whether argv starts an interactive login shell of
// shell with no script ([shell.Path, "-l"], "-il", "-li", "--login", or "-i"
// beside one of those), which ReplayInteractive can start from a snapshot:
// bash and zsh only.
func LoginTerminal(shell Shell, argv []string) bool {
	if shell.Name != "bash" && shell.Name != "zsh" || len(argv) < 2 || len(argv) > 3 || argv[0] != shell.Path {
		return false
	}
	flags := argv[1:]
	login := false
	for _, f := range flags {
		switch f {
		case "-l", "--login":
			login = true
		case "-il", "-li":
			login = len(flags) == 1
		case "-i":
		default:
			return false
		}
	}
	return login
}

// interactiveZdotdir carries the ZDOTDIR a zsh terminal's own environment had,
// which the loader puts back once zsh has found it through ZDOTDIR.
const interactiveZdotdir = "__SNAPEXEC_ZDOTDIR"

// The loaders: an interactive shell's startup file that evaluates the state
// carried in the chunk variables (as Replay carries it) and unsets them, in
// place of every profile and rc file. They are the same for every terminal.
const (
	bashLoader = `__snapexec_s= __snapexec_i=0
while [[ -v ` + StateEnvPrefix + `$__snapexec_i ]]; do
  __snapexec_v=` + StateEnvPrefix + `$__snapexec_i
  __snapexec_s+=${!__snapexec_v}
  builtin unset "$__snapexec_v"
  __snapexec_i=$((__snapexec_i + 1))
done
builtin unset __snapexec_i __snapexec_v
if ! builtin eval "$__snapexec_s" >/dev/null; then builtin printf 'failed to restore shell snapshot\n' >&2; fi
builtin unset __snapexec_s
`
	zshLoader = `if (( ${+` + interactiveZdotdir + `} )); then
  ZDOTDIR=$` + interactiveZdotdir + `
  builtin unset ` + interactiveZdotdir + `
else
  builtin unset ZDOTDIR
fi
__snapexec_s= __snapexec_i=0
while (( ${+parameters[` + StateEnvPrefix + `$__snapexec_i]} )); do
  __snapexec_v=` + StateEnvPrefix + `$__snapexec_i
  __snapexec_s+=${(P)__snapexec_v}
  builtin unset "$__snapexec_v"
  __snapexec_i=$((__snapexec_i + 1))
done
builtin unset __snapexec_i __snapexec_v
if ! builtin eval "$__snapexec_s" >/dev/null; then builtin print -r -- 'failed to restore shell snapshot' >&2; fi
builtin unset __snapexec_s
`
)

// ReplayInteractive rewrites a login terminal's launch (LoginTerminal:
// in.Command is [shell, flags...] at in.ShellStart) so that an interactive
// shell that sources no profile opens with the snapshot's state: its
// functions, aliases and options from the state, its exported variables
// from the environment, merged as Replay merges them. bash reads the
// loader through --rcfile, since an interactive bash ignores BASH_ENV; zsh
// through $ZDOTDIR/.zshrc, and gets its own ZDOTDIR back. The loaders are
// written into dir once (dir must be private to the server, and outlive the
// shells). It returns the command and environment, and modifies none of its
// inputs. A launch it cannot replay is returned as is.
func ReplayInteractive(in ReplayInput, dir string) (command []string, env map[string]string, err error) {
	command = slices.Clone(in.Command)
	if in.Snapshot == nil || in.ShellStart < 0 || in.ShellStart >= len(command) ||
		!LoginTerminal(Shell{Name: in.Shell, Path: command[in.ShellStart]}, command[in.ShellStart:]) {
		return command, maps.Clone(in.Env), nil
	}
	env = replayEnv(in)
	addStateChunks(env, profileExports(in.Snapshot, env)+in.Snapshot.State)
	shell := command[in.ShellStart]
	switch in.Shell {
	case "bash":
		rc, err := writeLoader(dir, "bashrc", bashLoader)
		if err != nil {
			return nil, nil, err
		}
		command = append(command[:in.ShellStart], shell, "--rcfile", rc, "-i")
	case "zsh":
		zdot := filepath.Join(dir, "zsh")
		if err := os.MkdirAll(zdot, 0o700); err != nil {
			return nil, nil, err
		}
		if _, err := writeLoader(zdot, ".zshrc", zshLoader); err != nil {
			return nil, nil, err
		}
		delete(env, interactiveZdotdir)
		if v, ok := env["ZDOTDIR"]; ok {
			env[interactiveZdotdir] = v
		}
		env["ZDOTDIR"] = zdot
		command = append(command[:in.ShellStart], shell, "-i")
	}
	return command, env, nil
}

// profileExports exports again the variables of the profile, with the
// values env gives them: an interactive shell sources the system's rc file
// (/etc/bash.bashrc, /etc/zsh/zshrc) before the loader, and its PS1 must
// not win over the profile's, as it does not in a real login shell, whose
// profile comes after it.
func profileExports(snap *Snapshot, env map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(snap.Env)) {
		// A name no shell can assign stays in the environment alone.
		if v, ok := env[name]; ok && name != "SHLVL" && name != "_" && shellName.MatchString(name) {
			b.WriteString("export " + name + "=" + shellQuote(v) + "\n")
		}
	}
	return b.String()
}

// shellName is a name a shell can assign.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// writeLoader writes content to dir/name unless it is there already, and
// returns its path. The file appears whole (a rename), so a shell started
// meanwhile never reads half of it.
func writeLoader(dir, name, content string) (string, error) {
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil && string(b) == content {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return "", err
	}
	_, err = tmp.WriteString(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}
