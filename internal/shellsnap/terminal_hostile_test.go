package shellsnap

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileTerminals are startup files of the strangest users, each a login
// terminal's capture must survive: it opens from the snapshot (used) or as
// a plain login shell (fallback), in bounded time, leaving no process and
// writing no file a real interactive login would not write. Each sets
// PS1='snap> ' (typeInTerminal waits for it) and records the processes it
// starts in files named pid*.
var hostileTerminals = []struct {
	name  string
	shell string
	files map[string]string
	want  Outcome
	// probe is typed into the replayed terminal; its output must hold
	// shows.
	probe string
	shows []string
	// mayChange are the files of the home the capture may change, as the
	// real shell does (docs/FIDELITY.md#login-terminals).
	mayChange []string
	// written are the files the capture writes, as the real shell does,
	// and what they must hold.
	written map[string]string
	// orPartial also takes a partial capture: once in a CI run under
	// -race, zsh's validation of the state of a .zshrc whose output goes
	// through tee left SAVEHIST unrestored (not reproduced in 16 runs
	// since); what the row is for is the log holding no dump.
	orPartial bool
	// timeout is the capture's, when not the 5 s that the rows that must
	// end at it take: compinit's dump takes about 1.5 s alone, and twice
	// (in CI under -race, and with other tests on both cores) more than 5.
	timeout time.Duration
}{
	{name: "reads stdin", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": "PS1='snap> '\nread -r x\nread -t 5 y\nalias after=true\n",
	}, probe: "alias after", shows: []string{"alias after='true'"}},
	{name: "terminal commands", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc":       "PS1='snap> '\nstty -echo\nstty -ixon 2>/dev/null\ntput setaf 1\nexport GPG_TTY=$(tty)\nalias after=true\n",
	}, probe: "alias after", shows: []string{"alias after='true'"}},
	{name: "exec sleep", shell: "bash", want: OutcomeFallback, files: map[string]string{
		".bash_profile": "PS1='snap> '\necho $$ >~/pid-exec\nexec sleep 1000\n",
	}},
	{name: "exec cat", shell: "bash", want: OutcomeFallback, files: map[string]string{
		".bash_profile": "PS1='snap> '\necho $$ >~/pid-exec\nexec /bin/cat\n",
	}},
	{name: "history then exec", shell: "bash", want: OutcomeFallback, files: map[string]string{
		".bash_profile": "PS1='snap> '\nHISTFILE=~/hist\nhistory -s added\nexec /bin/cat\n",
		"hist":          "one\n",
	}, mayChange: []string{"hist"}}, // bash saves the history before an exec
	{name: "exit trap then hang", shell: "bash", want: OutcomeFallback, files: map[string]string{
		".bash_profile": "PS1='snap> '\ntrap 'echo bye >~/trap-ran' EXIT\necho $$ >~/pid-shell\nsleep 1000\nsleep 1000\n",
	}},
	{name: "exit trap and prompt command", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc":       "PS1='snap> '\ntrap 'echo bye >$HOME/trap-ran' EXIT\nPROMPT_COMMAND='echo pc >>$HOME/pc-ran'\n",
	}, probe: "echo R:$PROMPT_COMMAND", shows: []string{"R:echo pc >>$HOME/pc-ran"}},
	{name: "strict options", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc":       "PS1='snap> '\nset -euo pipefail\nshopt -s extdebug\nset -o vi\nbind 'set bell-style none'\n",
	}, probe: "echo R:$-; shopt -p extdebug; set -o | grep -E '^(vi|pipefail) '", shows: []string{"shopt -s extdebug", "R:", "vi"}},
	{name: "history file", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc":       "PS1='snap> '\nHISTFILE=~/hist HISTSIZE=3 HISTFILESIZE=100 HISTCONTROL=ignoreboth:erasedups\nshopt -s histappend\nhistory -s added\n",
		"hist":          "one\ntwo\nthree\nfour\nfive\n",
	}, probe: "echo R:$HISTFILESIZE", shows: []string{"R:100"}},
	{name: "odd names and bytes", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc": "PS1=$'snap> $(echo sub)\\xff\\xfe \\\\$ '\n" +
			"alias nl=$'echo R:a\\necho R:b' q=\"echo R:it\\\\'s \\\\\\\"q\\\\\\\"\"\n" +
			"foo-bar() { echo R:foo-bar; }\na.b() { echo R:a.b; }\n::x() { echo R:colons; }\n",
	}, probe: "nl; q; foo-bar; a.b; ::x", shows: []string{"R:a", "R:b", `R:it's "q"`, "R:foo-bar", "R:a.b", "R:colons"}},
	{name: "many bind -x", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc":       "PS1='snap> '\nfor i in {0..9}; do for j in {a..z}; do bind -x \"\\\"\\\\C-x$i$j\\\": echo $i$j\"; done; done\n",
	}, probe: "bind -X | grep -c echo", shows: []string{"260"}},
	{name: "background jobs", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc":       "PS1='snap> '\nsleep 1000 & echo $! >~/pid-bg\ndisown\n(sleep 1000 & echo $! >~/pid-sub)\n",
	}},
	{name: "job control", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": "PS1='snap> '\nset -m\nsleep 1000 & echo $! >~/pid-monitor\n",
	}},
	{name: "debug trap and prompt array", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": ". ~/.bashrc\n",
		".bashrc":       "PS1='snap> '\nPROMPT_COMMAND=(':' 'LAST=$?')\nPS0='run\\n'\ntrap '[[ $BASH_COMMAND == x ]] || :' DEBUG\nalias after=true\n",
	}, probe: "trap -p DEBUG; alias after; echo R:${#PROMPT_COMMAND[@]}", shows: []string{"trap -- '[[ $BASH_COMMAND == x ]] || :' DEBUG", "alias after='true'", "R:2"}},
	{name: "output logged", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": "PS1='snap> '\nexec > >(tee -a ~/term.log) 2>&1\necho logged\n",
	}, written: map[string]string{"term.log": "logged\n"}},
	{name: "output hidden", shell: "bash", want: OutcomeUsed, files: map[string]string{
		".bash_profile": "PS1='snap> '\nexec >/dev/null\nalias after=true\n",
	}, probe: "alias after >&2", shows: []string{"alias after='true'"}},
	{name: "not a tty", shell: "zsh", want: OutcomeUsed, files: map[string]string{
		".zshrc": "PS1='snap> '\nread -r x\nstty -echo\ntput setaf 1\nexport GPG_TTY=$(tty)\nalias after=true\n",
	}, probe: "alias after", shows: []string{"after=true"}},
	{name: "output logged", shell: "zsh", want: OutcomeUsed, orPartial: true, files: map[string]string{
		".zshrc": "PS1='snap> '\nexec > >(tee -a ~/term.log) 2>&1\necho logged\n",
	}, written: map[string]string{"term.log": "logged\n"}},
	{name: "output hidden", shell: "zsh", want: OutcomeUsed, files: map[string]string{
		".zshrc": "PS1='snap> '\nexec >/dev/null\nalias after=true\n",
	}, probe: "alias after >&2", shows: []string{"after=true"}},
	{name: "exec sleep", shell: "zsh", want: OutcomeFallback, files: map[string]string{
		".zshrc": "PS1='snap> '\necho $$ >~/pid-exec\nexec sleep 1000\n",
	}},
	{name: "history then exec", shell: "zsh", want: OutcomeFallback, files: map[string]string{
		".zshrc": "PS1='snap> '\nHISTFILE=~/hist SAVEHIST=10 HISTSIZE=10\nprint -s added\nexec /bin/cat\n",
		"hist":   ": 1:0;one\n",
	}},
	{name: "exit trap then hang", shell: "zsh", want: OutcomeFallback, files: map[string]string{
		".zshrc": "PS1='snap> '\nTRAPEXIT() { echo bye >>~/trap-ran; }\nzshexit() { echo bye >>~/zshexit-ran; }\necho $$ >~/pid-shell\nsleep 1000\nsleep 1000\n",
	}},
	{name: "hooks and widgets", shell: "zsh", want: OutcomeUsed, files: map[string]string{
		".zshrc": "PS1='snap> '\nsetopt CORRECT\nmy-w() { LBUFFER+=x; }\nzle -N my-w\nbindkey -v\nbindkey '^Xw' my-w\n" +
			"precmd() { echo pc >>~/precmd-ran; }\nTRAPEXIT() { echo bye >>~/trap-ran; }\nHISTFILE=~/hist SAVEHIST=2 HISTSIZE=2\n",
		"hist": ": 1:0;one\n: 2:0;two\n: 3:0;three\n",
	}, probe: "bindkey -lL main; zle -lL my-w", shows: []string{"bindkey -A viins main", "zle -N my-w"}},
	{name: "compinit", shell: "zsh", want: OutcomeUsed, timeout: 30 * time.Second, files: map[string]string{
		".zshrc": "PS1='snap> '\nautoload -Uz compinit && compinit\n",
	}},
	{name: "background jobs", shell: "zsh", want: OutcomeUsed, files: map[string]string{
		".zshrc": "PS1='snap> '\nsleep 1000 & echo $! >~/pid-bg\n(sleep 1000 & echo $! >~/pid-sub)\n",
	}},
	{name: "job control", shell: "zsh", want: OutcomeUsed, files: map[string]string{
		".zshrc": "PS1='snap> '\nsetopt monitor\nsleep 1000 & echo $! >~/pid-monitor\n",
	}},
}

// TestHostileTerminalStartupFiles: a login terminal's capture of
// hostileTerminals' startup files ends in bounded time with the outcome
// wanted, kills whatever the startup files started, leaves every file of
// the home as it found it (a history file's content and mtime included)
// and writes none but compinit's .zcompdump, which a real login writes too;
// a terminal replayed from the snapshot opens and has what they set.
func TestHostileTerminalStartupFiles(t *testing.T) {
	for _, tt := range hostileTerminals {
		t.Run(tt.shell+"/"+tt.name, func(t *testing.T) {
			sh := shellByName(t, tt.shell)
			home := t.TempDir()
			writeHomeFiles(t, home, tt.files)
			old := time.Now().Add(-time.Hour)
			for name := range tt.files {
				if err := os.Chtimes(filepath.Join(home, name), old, old); err != nil {
					t.Fatal(err)
				}
			}
			before := homeFiles(t, home)
			env := loginEnv(home)
			env["TERM"] = "xterm"
			timeout := 5 * time.Second
			if tt.timeout > 0 {
				timeout = tt.timeout
			}
			c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t)), Timeout: timeout})
			t.Cleanup(c.Close)
			req := &Request{ScopeID: "hostile", Shell: Shell{Name: tt.shell, Path: sh.path}}
			started := time.Now()
			p, err := c.Prepare(context.Background(), req, Launch{Argv: []string{sh.path, "-l"}, Cwd: home, Env: env, Terminal: true})
			partial := tt.orPartial && p.Receipt.Outcome == OutcomePartial
			if err != nil || p.Receipt.Outcome != tt.want && !partial {
				t.Fatalf("Prepare(terminal) = %+v, %v; want %s", p.Receipt, err, tt.want)
			}
			if d := time.Since(started); d > timeout+3*time.Second {
				t.Errorf("the capture took %v, want it bounded by its %v timeout", d, timeout)
			}
			for _, pidFile := range pidFiles(t, home) {
				assertPidGone(t, pidFile)
			}
			after := homeFiles(t, home)
			for name, was := range before {
				if now, ok := after[name]; (!ok || now != was) && !slices.Contains(tt.mayChange, name) {
					t.Errorf("the capture changed %s: %q, want %q", name, now, was)
				}
			}
			for name, now := range after {
				if _, ok := tt.written[name]; ok {
					continue
				}
				if _, ok := before[name]; !ok && !slices.Contains(tt.mayChange, name) && !strings.HasPrefix(name, "pid") && !strings.HasPrefix(name, ".zcompdump") {
					t.Errorf("the capture wrote %s: %q", name, now)
				}
			}
			for name, want := range tt.written {
				if b, err := os.ReadFile(filepath.Join(home, name)); err != nil || string(b) != want {
					t.Errorf("the capture wrote %s: %q, %v; want %q, what the startup files printed", name, b, err, want)
				}
			}
			if tt.want != OutcomeUsed {
				return
			}
			argv, renv, ok := ReplayInteractive(ReplayInput{Snapshot: p.Snapshot, Shell: tt.shell, Command: []string{sh.path, "-l"}, Env: env})
			if !ok {
				t.Fatalf("ReplayInteractive(%s -l) did not replay", sh.path)
			}
			out := strings.ReplaceAll(typeInTerminal(t, argv, renv, home, tt.probe+"\necho R:alive; exit\n"), "\r", "")
			for _, want := range append(tt.shows, "R:alive") {
				if !strings.Contains(out, want) {
					t.Errorf("the replayed terminal shows no %q:\n%s", want, out)
				}
			}
			for _, bad := range []string{"syntax error", "command not found", "unexpected"} {
				if strings.Contains(out, bad) {
					t.Errorf("the replayed terminal says %q:\n%s", bad, out)
				}
			}
		})
	}
}

// homeFiles maps each file beneath home to its content and mtime.
func homeFiles(t *testing.T, home string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, path)
		files[rel] = string(b) + " @" + strconv.FormatInt(info.ModTime().UnixNano(), 10)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// pidFiles are the files named pid* in home.
func pidFiles(t *testing.T, home string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(home, "pid*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
