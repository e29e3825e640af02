package shellsnap

import (
	"context"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestLoginTerminal(t *testing.T) {
	bash := Shell{Name: "bash", Path: "/bin/bash"}
	tests := []struct {
		shell Shell
		argv  []string
		want  bool
	}{
		{bash, []string{"/bin/bash", "-l"}, true},
		{bash, []string{"/bin/bash", "-il"}, true},
		{bash, []string{"/bin/bash", "-li"}, true},
		{bash, []string{"/bin/bash", "--login"}, true},
		{bash, []string{"/bin/bash", "-i", "-l"}, true},
		{bash, []string{"/bin/bash", "-l", "-i"}, true},
		{Shell{Name: "zsh", Path: "/bin/zsh"}, []string{"/bin/zsh", "-l"}, true},
		{bash, []string{"/bin/bash"}, false},
		{bash, []string{"/bin/bash", "-i"}, false},
		{bash, []string{"/bin/bash", "-lc", "true"}, false},
		{bash, []string{"/bin/bash", "-l", "script.sh"}, false},
		{bash, []string{"/bin/bash", "-il", "-i"}, false},
		{bash, []string{"bash", "-l"}, false},
		{Shell{Name: "sh", Path: "/bin/sh"}, []string{"/bin/sh", "-l"}, false},
	}
	for _, tt := range tests {
		if got := LoginTerminal(tt.shell, tt.argv); got != tt.want {
			t.Errorf("LoginTerminal(%s, %q) = %t, want %t", tt.shell.Name, tt.argv, got, tt.want)
		}
	}
}

// loginProfiles are profiles that set what a terminal shows: a function, an
// alias, an exported variable, the shell variables of an interactive shell
// (the prompt, HISTSIZE, PROMPT_COMMAND), unexported, an option; and that
// say when they are sourced.
var loginProfiles = map[string]map[string]string{
	"bash": {".bash_profile": `echo PROFILE-RAN
greet() { echo "R:hello $1"; }
alias hi='echo R:alias-hi'
export MYVAR=from-profile
PS1='snap> ' HISTSIZE=77 PROMPT_COMMAND=:
set -o noclobber
`},
	"zsh": {".zprofile": `echo PROFILE-RAN
greet() { echo "R:hello $1"; }
alias hi='echo R:alias-hi'
export MYVAR=from-profile
PS1='snap> ' HISTSIZE=77
setopt noclobber
`},
}

// probe prints what the profile set, one R: line each, then exits.
const terminalProbe = `greet you; hi; echo "R:$MYVAR"; [[ -o noclobber ]] && echo R:noclobber; echo "R:$HISTSIZE${PROMPT_COMMAND-}"; echo "R:$-"; [[ -o history ]] && echo R:history; exit` + "\n"

// runTerminal runs argv on a pseudo-terminal in home with env, types the
// probe once the prompt shows, and returns everything the terminal showed.
func runTerminal(t *testing.T, argv []string, env map[string]string, home string) string {
	t.Helper()
	return typeInTerminal(t, argv, env, home, terminalProbe)
}

// typeInTerminal runs argv on a pseudo-terminal in home with env, types
// input once the prompt "snap> " shows, and returns everything the
// terminal showed until it closed; input must end the shell.
func typeInTerminal(t *testing.T, argv []string, env map[string]string, home, input string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = envPairs(env), home
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 200, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	buf := make([]byte, 4096)
	typed := false
	for {
		n, err := f.Read(buf)
		out.Write(buf[:n])
		if !typed && strings.Contains(out.String(), "snap> ") {
			typed = true
			if _, err := io.WriteString(f, input); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil {
			break
		}
	}
	_ = cmd.Wait()
	if !typed {
		t.Fatalf("%q never showed the prompt: %q", argv, out.String())
	}
	return out.String()
}

// results are the probe's R: lines.
func results(out string) []string {
	var r []string
	for line := range strings.SplitSeq(strings.ReplaceAll(out, "\r", ""), "\n") {
		if strings.HasPrefix(line, "R:") {
			r = append(r, line)
		}
	}
	return r
}

// TestReplayInteractiveMatchesALoginTerminal: a terminal replayed from a
// snapshot shows what a real interactive login shell shows (prompt,
// function, alias, exported variable, option), without sourcing the profile.
func TestReplayInteractiveMatchesALoginTerminal(t *testing.T) {
	for _, name := range []string{"bash", "zsh"} {
		t.Run(name, func(t *testing.T) {
			sh := shellByName(t, name)
			home := t.TempDir()
			writeHomeFiles(t, home, loginProfiles[name])
			env := loginEnv(home)
			env["TERM"] = "dumb"
			real := runTerminal(t, []string{sh.path, "-il"}, env, home)

			c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
			t.Cleanup(c.Close)
			req := &Request{ScopeID: "terminal", Shell: Shell{Name: name, Path: sh.path}}
			p, err := c.Prepare(context.Background(), req, Launch{Argv: []string{sh.path, "-il"}, Cwd: home, Env: env, Terminal: true})
			if err != nil || p.Snapshot == nil {
				t.Fatalf("Prepare() = %+v, %v; want a snapshot", p.Receipt, err)
			}
			argv, renv, ok := ReplayInteractive(ReplayInput{Snapshot: p.Snapshot, Shell: name, Command: []string{sh.path, "-il"},
				Env: env})
			if !ok {
				t.Fatalf("ReplayInteractive(%s -il) did not replay", sh.path)
			}
			replayed := runTerminal(t, argv, renv, home)

			want := []string{"R:hello you", "R:alias-hi", "R:from-profile", "R:noclobber"}
			if name == "bash" {
				want = append(want, "R:77:")
			} else {
				want = append(want, "R:77")
			}
			if got := results(real); !slices.Equal(got[:min(len(want), len(got))], want) {
				t.Fatalf("the real login terminal printed %q, want %q first: the probe is wrong\n%q", got, want, real)
			}
			if got, want := results(replayed), results(real); !slices.Equal(got, want) {
				t.Errorf("replayed terminal printed %q, the real one %q\nreplayed: %q", got, want, replayed)
			}
			if strings.Contains(replayed, "PROFILE-RAN") || strings.Contains(replayed, "failed to restore") {
				t.Errorf("the replayed terminal sourced the profile or failed its restore: %q", replayed)
			}
			if strings.Contains(replayed, internalEnvPrefix) {
				t.Errorf("the replayed terminal shows the replay's own variables: %q", replayed)
			}
		})
	}
}
