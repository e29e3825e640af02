package shellsnap

import (
	"maps"
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

// ReplayInteractive rewrites a login terminal's launch (LoginTerminal:
// in.Command is [shell, flags...] at in.ShellStart) so that an interactive
// shell opens with the snapshot's state without sourcing any profile. The
// snapshot must be a login terminal's (Launch.Terminal), captured by an
// interactive login shell (docs/design/snapshots.md#login-terminals): its
// restore is built as a command's is (docs/design/snapshots.md#replay) and
// holds the functions, aliases, options, traps and every variable (PS1,
// PROMPT_COMMAND, HISTFILE, HISTSIZE included) as the interactive startup
// files left them, the profile's changes applied to the request's
// environment, and the line editor's changed bindings (readline's for bash,
// zle's keymaps and widgets for zsh).
//
// zsh is started as asked: a login shell finds the restore's .zshenv and
// .zlogin through ZDOTDIR, and no other file in it. bash is started as
// `bash --noprofile --rcfile RESTORE -i`: an interactive bash reads no
// BASH_ENV, and a login one no rc file, so the terminal is an interactive
// shell that is not a login shell (login_shell is off, logout refuses),
// whose rc file (bashTerminalRC) sources the restore, and
// the request's BASH_ENV is left out of its environment: the restore would
// run it, as a non-interactive shell does, and an interactive one never does.
// Debian's bash reads /etc/bash.bashrc first, as a login shell's
// /etc/profile does; the restore comes after it, as the profile does.
//
// ok is false, and the launch is returned as is, for a snapshot that is no
// login terminal's or has no restore, or a launch that is not a login
// terminal.
func ReplayInteractive(in ReplayInput) (command []string, env map[string]string, ok bool) {
	command = slices.Clone(in.Command)
	if in.Snapshot == nil || !in.Snapshot.interactive || in.Snapshot.restore == "" || in.Shell == "bash" && in.Snapshot.terminal == "" || in.ShellStart < 0 || in.ShellStart >= len(command) ||
		!LoginTerminal(Shell{Name: in.Shell, Path: command[in.ShellStart]}, command[in.ShellStart:]) {
		return command, in.Env, false
	}
	switch in.Shell {
	case "zsh":
		return command, restoreEnv(in, "ZDOTDIR", userZdotdirVar), true
	default: // bash
		env = maps.Clone(in.Env)
		maps.DeleteFunc(env, func(name, _ string) bool {
			return name == "BASH_ENV" || strings.HasPrefix(name, internalEnvPrefix)
		})
		command = append(command[:in.ShellStart+1], "--noprofile", "--rcfile", in.Snapshot.terminal, "-i")
		return command, env, true
	}
}

// bashTerminalRC is the rc file of a login terminal's bash snapshot whose
// restore file is restore: the restore, then job control, which the
// capture's interactive shell, on no terminal, could not have (a profile
// that turns it off is not seen: the terminal has it on, as a new
// interactive shell has), then bindings, the bind commands of readline's
// changes (bashBindings). Every other option (history, its expansion,
// aliases, emacs or vi) is the capture's, an interactive shell's.
func bashTerminalRC(restore, bindings string) string {
	rc := `. ` + quote(restore) + `
{ \builtin set -o monitor; } 2>/dev/null
`
	if bindings != "" {
		rc += "{\n" + bindings + "\n} 2>/dev/null\n"
	}
	return rc
}
