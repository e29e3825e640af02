// Package sessiontest is the differential test of sessions' parts that the
// service's test and the server's share (docs/design/sessions.md#how-it-is-shown):
// per shell, a generator of state-changing commands, the probe, and one
// persistent shell fed through a pipe to compare with (bash here, zsh in
// zsh.go).
package sessiontest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// probeNames are the variables the generator touches, which the probe
// prints with declare -p.
const probeNames = "V1 V2 V3 N1 arr m S1 LIBV R1 OLDPWD PATH IFS"

// probe prints the state a next command sees: no line of it depends
// on how the command was run (no $0, line numbers or PIDs).
const probe = `pwd; dirs -p
for __v in ` + probeNames + `; do declare -p "$__v" 2>/dev/null || echo "$__v unset"; done
declare -A __env=(); while IFS= read -r -d '' __x; do __env[${__x%%=*}]=${__x#*=}; done < <(env -0)
for __v in V1 V2 V3 LIBV; do if [[ -v __env[$__v] ]]; then printf '%s in env: %q\n' "$__v" "${__env[$__v]}"; else echo "$__v not in env"; fi; done; unset __v __x __env
declare -f; declare -F; alias; set -o; shopt -p; umask; trap -p`

// mark separates the probe's output from the command's.
const mark = "::probe-end::"

// command returns one generated command of 1 to 3 state-changing
// statements; dir is a private directory it may cd into and write files in.
// last says whether the command may end with exit 3 (the reference leaves
// the exit out: its state at exit is the state before it).
func command(r *rand.Rand, dir string, n int) (cmd string, exits bool) {
	// Values bash's declare -p quotes each way ("...", $'...'), which the
	// session reads the exported ones from; valid UTF-8, which a script
	// sent as JSON must be.
	vals := []string{"a", "b c", "x'y", `p"q`, "é", "$HOME", "1 2 3", "", "l1\nl2", `b\s`, "t\tt", "$(echo x)`y`", "c\x01\x7f", `\`}
	val, pick, _, gens := shared(r, dir, vals)
	gens = append(gens,
		func() string { return "unset " + pick("V1", "V2", "V3", "arr", "m") },
		func() string { return "export -n " + pick("V1", "V2", "V3") },
		func() string { return "declare -i N1=" + fmt.Sprint(r.IntN(100)) },
		func() string { return "arr=(" + val() + " " + val() + ")" },
		func() string { return "arr+=(" + val() + ")" },
		func() string { return "declare -A m=([k]=" + val() + " [" + pick("j", "l m") + "]=" + val() + ")" },
		func() string { return "declare -A m; m[" + pick("x", "y z") + "]=" + val() },
		func() string { return "export PATH=" + sq(pick("/opt/bin", dir)) + ":$PATH" },
		func() string {
			return pick("f1", "f2", "my-fn") + "() { echo " + val() + " \"$@\"; local z=" + fmt.Sprint(n) + "; }"
		},
		func() string { return "unset -f " + pick("f1", "f2", "my-fn") },
		// A function exported, or a nameref: the dump lists the environment
		// with env then, not from declare -p.
		func() string { return "export -f " + pick("f1", "f2") + " 2>/dev/null" },
		func() string { return "declare -n R1=" + pick("V1", "V2", "V3") + pick("", "; export R1") },
		func() string { return "unset -n R1" },
		func() string { return "declare -nx R1=" + pick("V1", "V2", "V3") },
		// Attributes that change what an assignment stores, and the
		// variables bash sets as it starts (the dump must not depend on
		// IFS).
		func() string { return "declare -" + pick("l", "u", "t") + " " + pick("V2", "V3") + "=" + val() },
		func() string { return pick("unset IFS", "IFS=:", "unset OLDPWD", "IFS=$' \t\n'") },
		// An alias named as a word of the session's own lines, harmless
		// to the commands (a group still), not to a dump that read it.
		func() string { return "shopt -s expand_aliases; alias '{'='{ V1=brace;'" },
		func() string { return "unalias '{' 2>/dev/null" },
		// Functions and aliases changed by code the script does not show:
		// the dump must list the functions then (a command that cannot
		// change one skips the listing).
		func() string { return "eval " + sq(pick("f1", "f2")+"() { echo ev"+fmt.Sprint(n)+"; }") },
		func() string { return "mkf() { f2() { echo made" + fmt.Sprint(n) + "; }; }" },
		func() string { return "mkf 2>/dev/null" },
		func() string { return "eval " + sq("alias "+pick("ll", "la")+"="+sq("echo ev")) },
		func() string { return "BASH_ALIASES[" + pick("ll", "g") + "]=" + sq("f1() { echo ba; }") },
		func() string { return "trap " + sq("f1() { echo tr; }") + " USR2; kill -USR2 $$" },
		func() string { return pick("ll", "g") + " >/dev/null 2>&1" },
		func() string { return "declare -A m=([" + pick(".", "-", "a.b", "%", "/x") + "]=" + val() + ")" },
		func() string {
			return "alias " + pick("ll", "la", "g") + "=" + sq(pick("ls -l", "echo 'hi there'", "cd /"))
		},
		func() string { return "unalias " + pick("ll", "la", "g") + " 2>/dev/null" },
		func() string {
			return pick("set -o ", "set +o ") + pick("noclobber", "allexport", "pipefail", "noglob", "notify")
		},
		func() string {
			return pick("shopt -s ", "shopt -u ") + pick("extglob", "nullglob", "dotglob", "globstar", "expand_aliases", "lastpipe", "nocasematch")
		},
		func() string { return "umask " + pick("027", "077", "022", "0002") },
		func() string {
			return "trap " + sq(pick("echo usr1", "V2=trapped", "")) + " " + pick("USR1", "USR2", "HUP")
		},
		func() string { return "trap - " + pick("USR1", "USR2", "HUP") },
		func() string { return sourceLib(dir, n, "sh", `printf '%s\n'`, "set -o noclobber") },
		func() string { return pick("false", "ls /nonexistent-dir 2>/dev/null", "(exit 7)") },
		// Arithmetic, which evaluates the value of each variable it reads
		// and may so assign another (V3='N1=42'; (( V3 ))): a dump that
		// lists only the variables the script names must refuse those.
		func() string { return "N1=$(( ${N1:-0} + 1 ))" },
		func() string { return "(( N1 += 2 )) || :" },
		func() string {
			return "V3=" + pick(sq("N1=42"), "7", sq("arr[1]=9"), sq("V1=(1)")) + "; (( V3 )) 2>/dev/null || :"
		},
		func() string { return "let V2=N1*2 2>/dev/null || :" },
		func() string { return "echo \"${arr[V3]}\" >/dev/null 2>&1 || :" },
		func() string { return "[[ ${V2:-0} -eq 0 ]] 2>/dev/null || :" },
	)
	return compose(r, gens)
}

// shared returns what both shells' generators draw from: a value of vals,
// quoted; one of its arguments; the directories; and the statements both
// shells write alike (cd, pushd, popd, cd -, export and assignment), first
// in both generators, in this order.
func shared(r *rand.Rand, dir string, vals []string) (val func() string, pick func(...string) string, dirs []string, gens []func() string) {
	val = func() string { return sq(vals[r.IntN(len(vals))]) }
	pick = func(s ...string) string { return s[r.IntN(len(s))] }
	dirs = []string{"/", "/tmp", dir, dir + "/sub", "/usr"}
	return val, pick, dirs, []func() string{
		func() string { return "cd " + sq(pick(dirs...)) },
		func() string { return "pushd " + sq(pick(dirs...)) + " >/dev/null" },
		func() string { return "popd >/dev/null 2>&1" },
		func() string { return "cd - >/dev/null 2>&1" },
		func() string { return "export " + pick("V1", "V2", "V3") + "=" + val() },
		func() string { return pick("V1", "V2", "V3") + "=" + val() },
	}
}

// sourceLib writes, with the shell's print command, a file lib<n>.<ext> in
// dir that exports a variable, sets an array, defines a function and an
// alias, changes directory and sets an option, then sources it.
func sourceLib(dir string, n int, ext, print, option string) string {
	f := filepath.Join(dir, fmt.Sprintf("lib%d.%s", n, ext))
	return print + " " + sq("export LIBV="+fmt.Sprint(n)) + " " +
		sq("S1=("+fmt.Sprint(n)+" two)") + " " +
		sq("libf() { echo lib; }") + " " +
		sq("alias lib='echo lib'") + " " +
		sq("cd "+dir+"/sub") + " " +
		sq(option) + " >| " + f + "; source " + f
}

// compose joins 1 to 3 statements, each from a generator of gens picked at
// random; exits says whether the command then leaves by exit (1 in 8).
func compose(r *rand.Rand, gens []func() string) (cmd string, exits bool) {
	parts := make([]string, 1+r.IntN(3))
	for i := range parts {
		parts[i] = gens[r.IntN(len(gens))]()
	}
	return strings.Join(parts, "; "), r.IntN(8) == 0
}

// sq quotes s as one single-quoted shell word.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// persistentShell is one shell fed commands through a pipe.
type persistentShell struct {
	cmd  *osexec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	once sync.Once
}

func startPersistentBash(t *testing.T, env []string, dir string) *persistentShell {
	t.Helper()
	return startPersistent(t, env, dir, "/bin/bash", "--noprofile", "--norc", "-l")
}

// startPersistent starts argv as a persistent shell fed through a pipe.
func startPersistent(t *testing.T, env []string, dir string, argv ...string) *persistentShell {
	t.Helper()
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &persistentShell{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(b.Close)
	return b
}

// Close ends the shell; a second Close does nothing.
func (b *persistentShell) Close() {
	b.once.Do(func() {
		b.in.Close()
		b.cmd.Process.Kill()
		b.cmd.Wait()
	})
}

// probe runs the probe and returns its output; the shell must answer
// within a minute.
func (b *persistentShell) run(t *testing.T, script string) string {
	t.Helper()
	if _, err := io.WriteString(b.in, script+"\necho "+mark+"\n"); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		var sb strings.Builder
		for {
			line, err := b.out.ReadString('\n')
			if err != nil {
				done <- sb.String() + "<" + err.Error() + ">"
				return
			}
			if line == mark+"\n" {
				done <- sb.String()
				return
			}
			sb.WriteString(line)
		}
	}()
	select {
	case s := <-done:
		return s
	case <-time.After(time.Minute):
		t.Fatal("the persistent shell did not answer within a minute")
		return ""
	}
}

// dropSessionTrap removes the session's own EXIT trap from trap -p's
// listing: the one line a session's probe shows more (docs/design/sessions.md).
func dropSessionTrap(s string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if !strings.Contains(line, "__snapexec_end") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// LineDiff shows the lines of want (a persistent shell's) and got (a
// session's) that differ, by line number.
func LineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "  line %d: persistent %q\n          session    %q\n", i+1, a, c)
		}
	}
	return b.String()
}

// Seed is the generator's fixed seed; sequence n draws from PCG(Seed, n).
const Seed = 18

// Session is the session under test: Run runs script in it and returns its
// stdout and stderr, and whether its end state became the session's (and
// why not).
type Session interface {
	Run(t *testing.T, script string) (stdout, stderr string, kept bool, reason string)
}

// Sequence runs generated sequence n (5 to 15 commands) in the session
// start makes (a bash session in home, with env), and in one persistent
// bash, and reports whether every probe printed the same both ways; the
// first difference is reported with the sequence's commands. dir is a
// private directory the commands may use.
func Sequence(t *testing.T, n int, start func(home string, env map[string]string) Session) bool {
	t.Helper()
	return sequence(t, n, dialect{
		probe: probe, command: command, clean: dropSessionTrap,
		start: func(t *testing.T, env []string, dir string) *persistentShell { return startPersistentBash(t, env, dir) },
	}, start)
}

// dialect is what a shell's differential test takes: its probe, its
// generator, its persistent shell, and clean, which takes out of a
// session's probe the lines a session shows more (docs/design/sessions.md).
type dialect struct {
	probe   string
	command func(r *rand.Rand, dir string, n int) (cmd string, exits bool)
	start   func(t *testing.T, env []string, dir string) *persistentShell
	clean   func(string) string
}

// sequence runs generated sequence n as Sequence does, in d's shell.
func sequence(t *testing.T, n int, d dialect, start func(home string, env map[string]string) Session) bool {
	t.Helper()
	r := rand.New(rand.NewPCG(Seed, uint64(n)))
	home, dir := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
	sess := start(home, env)
	ref := d.start(t, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"}, home)
	defer ref.Close()
	count := 5 + r.IntN(11)
	var history []string
	for i := 0; i <= count; i++ {
		cmd, exits := "", false
		if i < count {
			cmd, exits = d.command(r, dir, i)
		}
		script := d.probe + "\necho " + mark + "\n" + cmd
		if exits {
			script += "; exit 3"
		}
		stdout, stderr, kept, reason := sess.Run(t, script)
		got, _, _ := strings.Cut(stdout, mark+"\n")
		want := d.clean(ref.run(t, d.probe))
		if cmd != "" {
			// A command ending in exit 3 is fed without it: the state at
			// exit is the state before it.
			ref.run(t, cmd)
		}
		if !kept {
			t.Errorf("sequence %d (seed %d): command %q: state not kept: %s", n, Seed, cmd, reason)
		}
		if d.clean(got) != want {
			t.Errorf("sequence %d (seed %d): after\n  %s\nthe session's probe differs from the persistent shell's:\n%s\nstderr: %s",
				n, Seed, strings.Join(history, "\n  "), LineDiff(want, d.clean(got)), stderr)
			return false
		}
		if cmd != "" {
			if exits {
				cmd += "; exit 3"
			}
			history = append(history, cmd)
		}
	}
	return true
}
