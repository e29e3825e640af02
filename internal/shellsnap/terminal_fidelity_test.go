package shellsnap

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The differential test of login terminals (docs/design/snapshots.md#login-terminals):
// startup files that set what only an interactive shell has (an alias, a
// function and a key binding behind `[[ $- == *i* ]]`, the prompts,
// PROMPT_COMMAND, shell options, readline's or zle's bindings, variables
// and widgets), a real interactive login shell on a pseudo-terminal, and
// a terminal replayed from the scope's login terminal snapshot on another:
// the same probe, typed into each, must print the same.

// interactiveProfiles are the startup files of the test, per shell.
var interactiveProfiles = map[string]map[string]string{
	"bash": {
		".bash_profile": `export MYVAR=from-profile
[[ -r ~/.bashrc ]] && . ~/.bashrc
`,
		".bashrc": `[[ $- == *i* ]] || return
alias ll='ls -l' gs='git status'
greet() { echo "hello $1"; }
PS1='snap> ' PS2='cont> '
PROMPT_COMMAND='LAST=$?'
HISTCONTROL=ignoreboth HISTSIZE=77
shopt -s globstar nocaseglob
shopt -u checkwinsize
set -o noclobber
bind '"\C-xg": "hello"'
bind -x '"\C-xh": echo "$HOME" hi'
bind -x $'"\\C-xj": printf \'%s\\n\' "a b"'
bind '"\C-a": end-of-line'
bind -r '\C-x\C-r'
bind 'set completion-ignore-case on'
bind -m vi-insert '"\C-l": clear-screen'
`,
	},
	"zsh": {
		".zprofile": `export MYVAR=from-profile
`,
		".zshrc": `[[ -o interactive ]] || return
alias ll='ls -l'
alias -g G='| grep'
alias -s txt=less
unalias run-help
greet() { echo "hello $1"; }
PS1='snap> ' PS2='cont> ' RPROMPT='%#'
HISTSIZE=77
setopt noclobber autocd histignorespace
my-widget() { LBUFFER+=x; }
zle -N my-widget
bindkey '^Xw' my-widget
bindkey -s '^Xh' 'hello'
bindkey -r '^A'
bindkey -M vicmd 'q' vi-quoted-insert
`,
	},
}

// terminalProbes print, between the lines @@begin and @@end, what the
// startup files may have set: $-, aliases, functions, options, the line
// editor's variables, bindings and widgets, the prompts and a few
// variables, the traps.
var terminalProbes = map[string]string{
	"bash": `printf '@@begin\n'
printf 'flags %s\n' "$-"
alias -p
declare -f
shopt -p
set -o
bind -v
for __m in emacs vi-insert vi-command; do printf '@ %s\n' "$__m"; bind -m "$__m" -p; bind -m "$__m" -s; bind -m "$__m" -X; done; unset __m
declare -p PS1 PS2 PS4 PROMPT_COMMAND HISTSIZE HISTFILESIZE HISTCONTROL HISTFILE MYVAR 2>&1
trap -p
complete -p
printf '@@end\n'
`,
	"zsh": `print -r -- '@@begin'
print -r -- "flags $-"
alias -L; alias -sL
functions
setopt
bindkey -lL main
for __m in emacs viins vicmd; do bindkey -LM $__m; done; unset __m
zle -lL
typeset -p PS1 PS2 RPROMPT HISTSIZE MYVAR 2>&1
trap
print -r -- '@@end'
`,
}

// probeShows are lines of what the profile set, which the real terminal's
// probe must show: else the probe or the profile is wrong.
var probeShows = map[string][]string{
	"bash": {"alias ll='ls -l'", "greet ()", `declare -- PS1="snap> "`, "shopt -s globstar", "noclobber      \ton",
		`"\C-xg": "hello"`, `"\C-xh": "echo \"$HOME\" hi"`, `"\C-a": end-of-line`, "set completion-ignore-case on", `"\C-l": clear-screen`},
	"zsh": {"alias ll='ls -l'", "greet () {", "typeset PS1='snap> '", "noclobber", `bindkey -M emacs "^Xw" my-widget`, "zle -N my-widget"},
}

// terminalDesign are the lines a replayed terminal prints otherwise by
// design, and why (docs/design/snapshots.md#login-terminals).
var terminalDesign = map[string]map[string]string{
	"bash": {
		// bash is started as an interactive shell with an rc file, which no
		// login shell reads: the terminal is not a login shell.
		"shopt -s login_shell": "a login shell", "shopt -u login_shell": "a login shell",
	},
}

// TestLoginTerminalMatchesARealOne: a terminal replayed from a login
// terminal's snapshot has what a real interactive login shell of the same
// startup files has, line editor included, without sourcing them.
func TestLoginTerminalMatchesARealOne(t *testing.T) {
	for _, name := range []string{"bash", "zsh"} {
		t.Run(name, func(t *testing.T) {
			sh := shellByName(t, name)
			home := t.TempDir()
			writeHomeFiles(t, home, interactiveProfiles[name])
			probe := filepath.Join(t.TempDir(), "probe")
			if err := os.WriteFile(probe, []byte(terminalProbes[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			input := ". " + quote(probe) + "; exit\n"
			env := loginEnv(home)
			env["TERM"] = "xterm"
			real := probed(t, typeInTerminal(t, []string{sh.path, "-il"}, env, home, input))

			c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
			t.Cleanup(c.Close)
			req := &Request{ScopeID: "terminal", Shell: Shell{Name: name, Path: sh.path}}
			p, err := c.Prepare(context.Background(), req, Launch{Argv: []string{sh.path, "-il"}, Cwd: home, Env: env, Terminal: true})
			if err != nil || p.Receipt.Outcome != OutcomeUsed {
				t.Fatalf("Prepare(terminal) = %+v, %v; want used", p.Receipt, err)
			}
			argv, renv, ok := ReplayInteractive(ReplayInput{Snapshot: p.Snapshot, Shell: name, Command: []string{sh.path, "-il"}, Env: env})
			if !ok {
				t.Fatalf("ReplayInteractive(%s -il) did not replay", sh.path)
			}
			replayed := probed(t, typeInTerminal(t, argv, renv, home, input))

			for _, want := range probeShows[name] {
				if !strings.Contains(real, want) {
					t.Fatalf("the real terminal's probe shows no %q: the probe or the profile is wrong\n%s", want, real)
				}
			}
			onlyReal, onlyReplayed := lineSetDiff(real, replayed, terminalDesign[name])
			if len(onlyReal)+len(onlyReplayed) > 0 {
				t.Errorf("the replayed terminal differs from a real `%s -il`:\nonly the real one:\n  %s\nonly the replayed one:\n  %s",
					name, strings.Join(onlyReal, "\n  "), strings.Join(onlyReplayed, "\n  "))
			}
		})
	}
}

// probed is the probe's output in a terminal's, its lines ended by \n.
func probed(t *testing.T, out string) string {
	t.Helper()
	out = strings.ReplaceAll(out, "\r\n", "\n")
	_, after, ok := strings.Cut(out, "@@begin\n")
	body, _, ok2 := strings.Cut(after, "@@end\n")
	if !ok || !ok2 {
		t.Fatalf("the probe did not run to its end:\n%q", out)
	}
	return body
}

// lineSetDiff returns the lines of a not in b and of b not in a, but for
// those of skip.
func lineSetDiff(a, b string, skip map[string]string) (onlyA, onlyB []string) {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	for _, line := range as {
		if _, ok := skip[line]; !ok && !slices.Contains(bs, line) {
			onlyA = append(onlyA, line)
		}
	}
	for _, line := range bs {
		if _, ok := skip[line]; !ok && !slices.Contains(as, line) {
			onlyB = append(onlyB, line)
		}
	}
	return onlyA, onlyB
}

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

// BenchmarkTerminalCapture times a whole capture (the capture shell, the
// parse, the validation, the restore files) of interactiveProfiles, whose
// ~/.bashrc and .zshrc bind keys: as a command's snapshot (`-lc`) and as a
// login terminal's (an interactive login shell, which lists the line
// editor's keymaps before and after the startup files). Besides the mean it
// reports the median (ms/median), which a shared machine's stray slow
// capture moves less, and the state's size (state-bytes).
func BenchmarkTerminalCapture(b *testing.B) {
	for _, name := range []string{"bash", "zsh"} {
		sh := shellByName(b, name)
		home := b.TempDir()
		writeHomeFiles(b, home, interactiveProfiles[name])
		env := loginEnv(home)
		env["TERM"] = "xterm"
		c := newTestCache(b, Options{Capture: NewCapturer(newTestProcs(b))})
		b.Cleanup(c.Close)
		req := &Request{ScopeID: "bench", Shell: Shell{Name: name, Path: sh.path}}
		for _, l := range []Launch{
			{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: env},
			{Argv: []string{sh.path, "-il"}, Cwd: home, Env: env, Terminal: true},
		} {
			kind := map[bool]string{false: "command", true: "terminal"}[l.Terminal]
			b.Run(name+"/"+kind, func(b *testing.B) {
				var took []time.Duration
				size := 0
				for b.Loop() {
					c.Forget("bench")
					started := time.Now()
					p, err := c.Prepare(context.Background(), req, l)
					took = append(took, time.Since(started))
					if err != nil || p.Receipt.Outcome != OutcomeUsed || p.Receipt.State != StateOnDemand {
						b.Fatalf("Prepare(%s) = %+v, %v; want a capture, used", kind, p.Receipt, err)
					}
					size = p.Snapshot.StateBytes
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "ms/median")
				b.ReportMetric(float64(size), "state-bytes")
			})
		}
	}
}
