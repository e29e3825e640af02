package service

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// The differential test of sessions (docs/design/sessions.md#how-it-is-shown):
// generated sequences of state-changing commands run once through a session
// and once in one persistent bash fed the same commands through a pipe; after
// each command a probe must print the same both ways.

// probeNames are the variables the generator touches, which the probe
// prints with declare -p.
var probeNames = []string{"V1", "V2", "V3", "N1", "arr", "m", "S1", "LIBV", "OLDPWD", "PATH"}

// sessionProbe prints the state a next command sees: no line of it depends
// on how the command was run (no $0, line numbers or PIDs).
var sessionProbe = `pwd; dirs -p
for __v in ` + strings.Join(probeNames, " ") + `; do declare -p "$__v" 2>/dev/null || echo "$__v unset"; done; unset __v
declare -F; alias; set -o; shopt -p; umask; trap -p`

// probeMark separates the probe's output from the command's.
const probeMark = "::probe-end::"

// genCommand returns one generated command of 1 to 3 state-changing
// statements; dir is a private directory it may cd into and write files in.
// last says whether the command may end with exit 3 (the reference leaves
// the exit out: its state at exit is the state before it).
func genCommand(r *rand.Rand, dir string, n int) (cmd string, exits bool) {
	vals := []string{"a", "b c", "x'y", `p"q`, "é", "$HOME", "1 2 3", ""}
	val := func() string { return sq(vals[r.IntN(len(vals))]) }
	dirs := []string{"/", "/tmp", dir, dir + "/sub", "/usr"}
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	gens := []func() string{
		func() string { return "cd " + sq(pick(dirs...)) },
		func() string { return "pushd " + sq(pick(dirs...)) + " >/dev/null" },
		func() string { return "popd >/dev/null 2>&1" },
		func() string { return "cd - >/dev/null 2>&1" },
		func() string { return "export " + pick("V1", "V2", "V3") + "=" + val() },
		func() string { return pick("V1", "V2", "V3") + "=" + val() },
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
		func() string {
			f := filepath.Join(dir, fmt.Sprintf("lib%d.sh", n))
			return "printf '%s\\n' " + sq("export LIBV="+fmt.Sprint(n)) + " " +
				sq("S1=("+fmt.Sprint(n)+" two)") + " " +
				sq("libf() { echo lib; }") + " " +
				sq("alias lib='echo lib'") + " " +
				sq("cd "+dir+"/sub") + " " +
				sq("set -o noclobber") + " >| " + f + "; source " + f
		},
		func() string { return pick("false", "ls /nonexistent-dir 2>/dev/null", "(exit 7)") },
	}
	k := 1 + r.IntN(3)
	parts := make([]string, k)
	for i := range parts {
		parts[i] = gens[r.IntN(len(gens))]()
	}
	cmd = strings.Join(parts, "; ")
	if r.IntN(8) == 0 {
		return cmd, true
	}
	return cmd, false
}

// sq quotes s as one single-quoted shell word.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// persistentBash is one bash fed commands through a pipe.
type persistentBash struct {
	cmd *osexec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startPersistentBash(t *testing.T, env []string, dir string) *persistentBash {
	t.Helper()
	cmd := osexec.Command("/bin/bash", "--noprofile", "--norc", "-l")
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
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &persistentBash{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

// probe runs the probe and returns its output; the shell must answer
// within a minute.
func (b *persistentBash) run(t *testing.T, script string) string {
	t.Helper()
	if _, err := io.WriteString(b.in, script+"\necho "+probeMark+"\n"); err != nil {
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
			if line == probeMark+"\n" {
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
		t.Fatal("the persistent bash did not answer within a minute")
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

func TestSessionMatchesPersistentBash(t *testing.T) {
	sequences := 200
	if testing.Short() {
		sequences = 20
	}
	s := newSessionService(t, session.Options{})
	const seed = 18
	for seq := range sequences {
		r := rand.New(rand.NewPCG(seed, uint64(seq)))
		if !diffSequence(t, s, r, seq) {
			t.Fatalf("sequence %d of seed %d differs (rerun: the seed and sequence above)", seq, seed)
		}
	}
}

// diffSequence runs one generated sequence both ways and reports whether
// every probe matched.
func diffSequence(t *testing.T, s *Service, r *rand.Rand, seq int) bool {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
	cwd := home
	info, err := s.CreateSession(ctx, SessionInput{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &cwd, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer s.DeleteSession(info.ID)
	ref := startPersistentBash(t, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"}, home)
	n := 5 + r.IntN(11)
	var history []string
	for i := 0; i <= n; i++ {
		cmd, exits := "", false
		if i < n {
			cmd, exits = genCommand(r, dir, i)
		}
		sessionScript := sessionProbe + "\necho " + probeMark + "\n" + cmd
		if exits {
			sessionScript += "; exit 3"
		}
		out, err := s.SessionExec(ctx, info.ID, SessionExecInput{Script: sessionScript, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := strings.Cut(string(out.Result.Stdout.Data), probeMark+"\n")
		want := ref.run(t, sessionProbe)
		if cmd != "" {
			ref.run(t, cmd)
		}
		if !out.Session.StateKept {
			t.Errorf("sequence %d: command %q: state not kept: %s", seq, cmd, out.Session.Reason)
		}
		if dropSessionTrap(got) != want {
			t.Errorf("sequence %d: after\n  %s\nthe session's probe differs from the persistent bash's:\n%s\nstderr: %s",
				seq, strings.Join(history, "\n  "), lineDiff(want, dropSessionTrap(got)), out.Result.Stderr.Data)
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

// lineDiff shows the lines of want and got that differ.
func lineDiff(want, got string) string {
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
