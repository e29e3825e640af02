package sessiontest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// zshProbeNames are the parameters zsh's generator touches, which the probe
// prints with typeset -p.
const zshProbeNames = "V1 V2 V3 N1 F1 arr m S1 LIBV OLDPWD PATH path"

// zshProbe prints the state a next zsh command sees, as probe does for
// bash: the functions one by one, since the session's own hook is one of
// them.
const zshProbe = `pwd; dirs -p
for __v in ` + zshProbeNames + `; do typeset -p $__v 2>/dev/null || echo "$__v unset"; done; unset __v
for __v in ${(ok)functions}; do [[ $__v == __snapexec_* ]] || functions -- $__v; done; unset __v
alias -L; alias -sL; hash -dL; setopt; umask; trap`

// zshStartOptions are the options that tell how the shell was started, which
// setopt lists and a command cannot change: a session's shell is a login
// shell that read its startup files; the persistent one reads its commands
// from stdin with none (zsh -f).
var zshStartOptions = map[string]bool{"login": true, "shinstdin": true, "norcs": true}

// cleanZsh takes out of a zsh probe's output the session's own EXIT trap
// (one line, $'...'-quoted) and the options of how the shell started.
func cleanZsh(s string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if !strings.Contains(line, "__snapexec_") && !zshStartOptions[line] {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// zshCommand returns one generated zsh command of 1 to 3 state-changing
// statements, as command does for bash.
func zshCommand(r *rand.Rand, dir string, n int) (cmd string, exits bool) {
	vals := []string{"a", "b c", "x'y", `p"q`, "é", "$HOME", "1 2 3", ""}
	val, pick, dirs, gens := shared(r, dir, vals)
	gens = append(gens,
		func() string { return "unset " + pick("V1", "V2", "V3", "arr", "m", "N1", "F1") },
		func() string { return "typeset +x " + pick("V1", "V2", "V3") },
		func() string { return "typeset -i N1=" + fmt.Sprint(r.IntN(100)) },
		func() string { return "typeset -F F1=" + fmt.Sprint(r.IntN(100)) + ".25" },
		func() string { return "arr=(" + val() + " " + val() + ")" },
		func() string { return "arr+=(" + val() + ")" },
		func() string { return "typeset -A m=(k " + val() + " " + sq(pick("j", "l m")) + " " + val() + ")" },
		func() string { return "typeset -A m; m[" + pick("x", "'y z'") + "]=" + val() },
		func() string { return "export PATH=" + sq(pick("/opt/bin", dir)) + ":$PATH" },
		func() string { return "path=(" + sq(pick("/opt/sbin", dir+"/sub")) + " $path)" },
		func() string { return "path+=(" + sq(pick("/usr/local/games", dir)) + ")" },
		func() string {
			return pick("f1", "f2", "my-fn") + "() { echo " + val() + " \"$@\"; local z=" + fmt.Sprint(n) + "; }"
		},
		func() string { return "function " + pick("f1", "f2") + " { print -r -- " + val() + "; }" },
		func() string {
			return "unfunction " + pick("f1", "f2", "my-fn", "TRAPUSR2", "TRAPZERR") + " 2>/dev/null"
		},
		func() string { return "TRAPUSR2() { echo " + val() + "; }" },
		func() string { return "TRAPZERR() { V3=" + val() + "; }" },
		func() string { return "autoload -Uz " + pick("zargs", "zmv") },
		func() string { return "hash -d " + pick("nd", "proj") + "=" + sq(pick(dirs...)) },
		func() string {
			return "alias " + pick("ll", "la", "g") + "=" + sq(pick("ls -l", "echo 'hi there'", "cd /"))
		},
		func() string { return "alias -g " + pick("G", "NUL") + "=" + sq(pick("| wc -l", ">/dev/null 2>&1")) },
		func() string { return "alias -s " + pick("txt", "md") + "=" + pick("cat", "less") },
		func() string { return "unalias " + pick("ll", "la", "g", "G", "NUL") + " 2>/dev/null" },
		func() string { return "unalias -s " + pick("txt", "md") + " 2>/dev/null" },
		func() string {
			return pick("setopt ", "unsetopt ") + pick("noclobber", "extendedglob", "nullglob", "globdots", "pipefail",
				"autopushd", "pushdignoredups", "allexport", "shwordsplit", "ksharrays", "chaselinks", "cdablevars")
		},
		func() string { return "umask " + pick("027", "077", "022", "0002") },
		func() string {
			return "trap " + sq(pick("echo usr1", "V2=trapped", "")) + " " + pick("USR1", "HUP", "TERM")
		},
		func() string { return "trap - " + pick("USR1", "HUP", "TERM") },
		func() string { return sourceLib(dir, n, "zsh", "print -rl --", "setopt noclobber") },
		func() string { return pick("false", "ls /nonexistent-dir 2>/dev/null", "(exit 7)") },
	)
	return compose(r, gens)
}

// ZshSequence runs generated zsh sequence n in the session start makes (a
// zsh session in home, with env) and in one persistent zsh -f, as Sequence
// does for bash.
func ZshSequence(t *testing.T, n int, zsh string, start func(home string, env map[string]string) Session) bool {
	t.Helper()
	return sequence(t, n, dialect{
		probe: zshProbe, command: zshCommand, clean: cleanZsh,
		start: func(t *testing.T, env []string, dir string) *persistentShell {
			return startPersistent(t, env, dir, zsh, "-f")
		},
	}, start)
}
