package shellsnap

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestTerminalCaptureLeavesNoTrace: a login terminal's capture, an
// interactive login shell, never writes the user's history file, even
// when the startup files added to the history, and runs nothing at its
// exit (an EXIT trap, ~/.bash_logout, zshexit, .zlogout); bash's reads no
// ~/.bashrc that the profile does not source, as `bash -il` reads none,
// where a command's capture sources it by the reference's rule.
func TestTerminalCaptureLeavesNoTrace(t *testing.T) {
	profiles := map[string]map[string]string{
		"bash": {
			".bash_profile": "HISTFILE=~/hist HISTSIZE=50\nhistory -s added-by-the-profile\ntrap 'echo trap >>~/ran' EXIT\n",
			".bash_logout":  "echo logout >>~/ran\n",
			".bashrc":       "alias fromrc=true\n",
		},
		"zsh": {
			".zshrc":   "HISTFILE=~/hist HISTSIZE=50 SAVEHIST=50\nprint -s added-by-zshrc\nzshexit() { echo zshexit >>~/ran; }\ntrap 'echo trap >>~/ran' EXIT\n",
			".zlogout": "echo logout >>~/ran\n",
		},
	}
	for _, name := range []string{"bash", "zsh"} {
		t.Run(name, func(t *testing.T) {
			sh := shellByName(t, name)
			home := t.TempDir()
			writeHomeFiles(t, home, profiles[name])
			const history = "old line 1\nold line 2\n"
			writeHomeFiles(t, home, map[string]string{"hist": history})
			c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
			t.Cleanup(c.Close)
			req := &Request{ScopeID: "trace", Shell: Shell{Name: name, Path: sh.path}}
			p, err := c.Prepare(context.Background(), req, Launch{Argv: []string{sh.path, "-l"}, Cwd: home, Env: loginEnv(home), Terminal: true})
			if err != nil || p.Receipt.Outcome != OutcomeUsed {
				t.Fatalf("Prepare(terminal) = %+v, %v; want used", p.Receipt, err)
			}
			if b, err := os.ReadFile(filepath.Join(home, "hist")); err != nil || string(b) != history {
				t.Errorf("the history file after the capture = %q, %v; want it untouched, %q", b, err, history)
			}
			if b, err := os.ReadFile(filepath.Join(home, "ran")); err == nil {
				t.Errorf("the capture ran at its exit: %q", b)
			}
			if name != "bash" {
				return
			}
			if p.Snapshot.AliasCount != 0 {
				t.Errorf("the terminal's snapshot has %d aliases; want none: `bash -il` reads no ~/.bashrc the profile does not source", p.Snapshot.AliasCount)
			}
			cmd, err := c.Prepare(context.Background(), req, Launch{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: loginEnv(home)})
			if err != nil || cmd.Snapshot == nil || cmd.Snapshot.AliasCount != 1 {
				t.Errorf("a command's snapshot = %+v, %v; want ~/.bashrc's alias, by the reference's rule", cmd.Receipt, err)
			}
		})
	}
}
