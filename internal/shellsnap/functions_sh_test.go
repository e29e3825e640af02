package shellsnap

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// shLoginProbe runs [/bin/sh -lc probe args...] as the login shell it is, in
// home with env, and returns its stdout and stderr together.
func shLoginProbe(t *testing.T, home string, env map[string]string, probe string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-lc", probe}, args...)...)
	cmd.Dir, cmd.Env = home, envpolicy.List(env)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// shPrepare captures (or finds) the snapshot of the sh launch [probe args...]
// and returns its receipt and the replayed command's stdout and stderr.
func shPrepare(t *testing.T, c *Cache, home string, env map[string]string, probe string, args ...string) (Receipt, string) {
	t.Helper()
	req := &Request{ScopeID: "sh", Shell: Shell{Name: "sh", Path: "/bin/sh"}}
	l := Launch{Argv: append([]string{"/bin/sh", "-lc", probe}, args...), Cwd: home, Env: maps.Clone(env)}
	p, err := c.Prepare(context.Background(), req, l)
	if err != nil {
		t.Fatalf("Prepare() error %v", err)
	}
	if p.Snapshot == nil {
		t.Fatalf("Prepare() = %+v, want a snapshot", p.Receipt)
	}
	argv, replayEnv := replayOf(req, l, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = home, envpolicy.List(replayEnv)
	out, _ := cmd.CombinedOutput()
	return p.Receipt, string(out)
}

// TestShFunctionsAndSources compares a replayed sh (dash) command with the
// login shell, sh -lc, for profiles that define functions in every way a
// capture must tell apart, source files from files (whose "." the capture
// wraps: $?, positional parameters, return, errexit, a lookup in PATH, a
// file sourced from a function), and source $ENV themselves.
func TestShFunctionsAndSources(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		probe string
		// unrestored are the functions the capture must name as such; the
		// probe must not tell them apart.
		unrestored []string
	}{
		{
			name:  "plain",
			files: map[string]string{".profile": "greet() { echo \"hello $1\"; }\n"},
			probe: "command -V greet; greet you",
		},
		{
			name:  "two on one line, one on the next",
			files: map[string]string{".profile": "one() { echo 1; }; two() { echo 2; no_such_in_two; }\nthree() { no_such_in_three; }\n"},
			probe: "one; two; three",
		},
		{
			name: "from files with odd names, under set -eu, noglob and an odd IFS",
			files: map[string]string{".profile": "set -euf\nIFS=':'\n. \"$HOME/it's extra\"\nPATH=\"$HOME/d*r:$PATH\"\n. in-path.sh\nset +euf\n",
				"it's extra": "odd_fn() { echo odd; }\n", "d*r/in-path.sh": "path_fn() { echo path; }\n"},
			probe: "odd_fn; path_fn",
		},
		{
			name: "with aliases of the words the capture and the restore use after the profile",
			files: map[string]string{".profile": "greet() { echo hi; }\nset -- a b\ntrap 'echo bye' EXIT\nulimit -S -n 256\numask 027\n( : ) & wait\nset -o noclobber\n" +
				"alias eval='echo no' type='echo no' grep='echo no' sort='echo no' unset='echo no' set='echo no' trap='echo no' ulimit='echo no' umask='echo no' wait='echo no' :='echo no'\n"},
			probe: "greet; command -V greet; printf '%s|%s|%s|%s|%s\\n' \"$*\" \"$(\\ulimit -S -n)\" \"$(\\umask)\" \"$-\" \"${!:+set}\"",
		},
		{
			name: "conditional",
			files: map[string]string{".profile": "if [ -n \"${NOPE:-}\" ]; then\n  maybe() { echo yes; }\nfi\nif true; then sure() { echo sure; }; fi\n" +
				"case x in y) never() { :; } ;; *) always() { echo always; } ;; esac\n"},
			probe: "command -V maybe sure never always 2>&1; sure; always",
		},
		{
			name:  "twice the same, in two files",
			files: map[string]string{".profile": "same() { echo same; }\n. \"$HOME/.extra\"\n", ".extra": "same() { echo same; }\n"},
			probe: "command -V same; same",
		},
		{
			name:       "twice, differently",
			files:      map[string]string{".profile": "twice() { echo one; }\ntwice() { echo two; }\nother() { echo other; }\n"},
			probe:      "command -V other; other",
			unrestored: []string{"twice"},
		},
		{
			name:       "from an eval",
			files:      map[string]string{".profile": "eval 'made() { echo made; }'\nkept() { echo kept; }\n"},
			probe:      "kept",
			unrestored: []string{"made"},
		},
		{
			name:       "from an eval of generated text",
			files:      map[string]string{".profile": "eval \"$(printf 'gen() { echo gen; }')\"\nkept() { echo kept; }\n"},
			probe:      "kept",
			unrestored: []string{"*", "gen"}, // gen( is in the file's text
		},
		{
			name: "from files sourced with \\. and command .",
			files: map[string]string{".profile": "export NVM_DIR=\"$HOME/.nvm\"\n[ -s \"$NVM_DIR/nvm.sh\" ] && \\. \"$NVM_DIR/nvm.sh\"\ncommand . \"${HOME}/.more\"\n",
				".nvm/nvm.sh": "nvm() { echo nvm; nvm_inner; }\n\\. \"$NVM_DIR/inner.sh\"\n", ".nvm/inner.sh": "nvm_inner() { echo inner; }\n", ".more": "more_fn() { echo more; }\n"},
			probe: "nvm; more_fn",
		},
		{
			name:       "from a file sourced with \\. by a name the capture cannot work out",
			files:      map[string]string{".profile": "\\. \"$(printf %s \"$HOME/.hidden\")\"\nkept() { echo kept; }\n", ".hidden": "hidden_fn() { echo hidden; }\n"},
			probe:      "kept",
			unrestored: []string{"*"},
		},
		{
			name: "after unalias -a, which ends the watch of \".\"",
			files: map[string]string{".profile": "alias ll='ls -l'\nunalias -a\n. \"$HOME/.late\"\nexport ENV=\"$HOME/.late\"\n",
				".late": "RUNS=\"${RUNS:-}x\"\nlate_fn() { echo late; }\n"},
			probe:      "printf '%s\\n' \"$RUNS\"; command -V ll 2>&1",
			unrestored: []string{"*"},
		},
		{
			name: "in a sourced file, with its line numbers",
			files: map[string]string{".profile": "export PATH=\"$HOME/lib:$PATH\"\n. extra.sh\n",
				"lib/extra.sh": "\n\nfails() {\n  echo in fails\n  no_such_command_in_fails\n}\nheredoc() {\n  cat <<EOF\nfake() { :; }\nEOF\n}\nloud() { echo to-stderr; } >&2\n"},
			probe: "fails; heredoc; loud; command -V fake 2>&1",
		},
		{
			name: "the wrapped dot is the dot",
			files: map[string]string{
				".profile": "false\n. \"$HOME/inner\"\nRC=$?\nset -e\nsrc() { . \"$HOME/fnfile\"; }\nsrc fn-arg\nfor f in \"$HOME/loop1\" \"$HOME/loop2\"; do . \"$f\"; done\n. ./inner2 || :\nset +e\nSTATUS=\"$RC $INNER_ST $INNER_ARGS $FN_ARGS $LOOPS $INNER2\"\n",
				"inner":    "INNER_ST=$?\nINNER_ARGS=\"$#:$*\"\nreturn 3\nINNER_AFTER=1\n",
				"fnfile":   "FN_ARGS=\"$#:$*\"\nfrom_fnfile() { echo fnfile; }\n",
				"loop1":    "LOOPS=\"${LOOPS:-}1\"\n",
				"loop2":    "LOOPS=\"${LOOPS:-}2\"\n",
				"inner2":   "INNER2=ran\n",
			},
			probe: "printf '%s|%s|%s\\n' \"$STATUS\" \"${INNER_AFTER-unset}\" \"$*\"; from_fnfile",
		},
		{
			name: "$ENV sourced by the profile runs once",
			files: map[string]string{".profile": "export ENV=\"$HOME/.shrc\"\n. \"$ENV\"\n",
				".shrc": "export PATH=\"$HOME/rc-bin:$PATH\"\nRC_RUNS=\"${RC_RUNS:-}x\"\nrc_fn() { echo rc; }\n"},
			probe: "printf '%s %s\\n' \"$PATH\" \"$RC_RUNS\"; rc_fn",
		},
		{
			name: "$ENV sourced by the profile with \\. runs once",
			files: map[string]string{".profile": "export ENV=\"$HOME/.shrc\"\n\\. \"$ENV\"\n",
				".shrc": "export PATH=\"$HOME/rc-bin:$PATH\"\nRC_RUNS=\"${RC_RUNS:-}x\"\n"},
			probe: "printf '%s %s\\n' \"$PATH\" \"$RC_RUNS\"",
		},
		{
			name:  "named like a builtin the restore calls",
			files: map[string]string{".profile": "CALLS=\numask() { CALLS=\"${CALLS}u\"; command umask \"$@\"; }\nalias() { CALLS=\"${CALLS}a\"; command alias \"$@\"; }\nalias ll='ls -l'\numask 027\n"},
			probe: "printf '%s\\n' \"$CALLS\"; command -V umask alias",
		},
	}
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			writeHomeFiles(t, home, tt.files)
			env := loginEnv(home)
			args := []string{"zero", "one", "two words"}
			want := shLoginProbe(t, home, env, tt.probe, args...)
			r, got := shPrepare(t, c, home, env, tt.probe, args...)
			if got != want {
				t.Errorf("replay differs from sh -lc:\nlogin:\n%s\nreplay:\n%s", want, got)
			}
			var names []string
			for _, p := range r.Unrestored {
				if p.Kind != "function" {
					t.Errorf("unrestored %+v, want functions only", p)
				}
				names = append(names, p.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.unrestored) {
				t.Errorf("unrestored functions %q, want %q", names, tt.unrestored)
			}
			wantOutcome := OutcomeUsed
			if len(tt.unrestored) > 0 {
				wantOutcome = OutcomePartial
			}
			if r.Outcome != wantOutcome {
				t.Errorf("outcome %q, want %q", r.Outcome, wantOutcome)
			}
		})
	}
}

// TestShSourcedFileStamped: a file the profile sources, with . or \., is
// stamped, so an edit to it is captured afresh.
func TestShSourcedFileStamped(t *testing.T) {
	for _, dot := range []string{".", `\.`} {
		t.Run(dot, func(t *testing.T) { testShSourcedFileStamped(t, dot) })
	}
}

func testShSourcedFileStamped(t *testing.T, dot string) {
	home := t.TempDir()
	writeHomeFiles(t, home, map[string]string{".profile": dot + " \"$HOME/.extra\"\n", ".extra": "export EXTRA=1\nextra_fn() { echo one; }\n"})
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	env := loginEnv(home)
	probe := `printf '%s ' "$EXTRA"; extra_fn`
	if r, got := shPrepare(t, c, home, env, probe); r.State != StateOnDemand || got != "1 one\n" {
		t.Fatalf("first command: %q, %q; want on_demand, \"1 one\"", r.State, got)
	}
	time.Sleep(2 * time.Millisecond) // a distinct mtime even on coarse clocks
	if err := os.WriteFile(filepath.Join(home, ".extra"), []byte("export EXTRA=2\nextra_fn() { echo two, longer; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, got := shPrepare(t, c, home, env, probe)
	if want := shLoginProbe(t, home, env, probe); r.State != StateOnDemand || got != want || !strings.HasPrefix(got, "2 two") {
		t.Errorf("after ~/.extra changed: %q, %q; want on_demand and the login's %q", r.State, got, want)
	}
}

// TestShPositionalChangeFallsBack: a file sourced by the profile's files
// that changes their positional parameters (set --, shift) would do so only
// in the capture's function around ".": the capture fails instead, and the
// command runs as its login shell, exactly.
func TestShPositionalChangeFallsBack(t *testing.T) {
	home := t.TempDir()
	writeHomeFiles(t, home, map[string]string{".profile": ". \"$HOME/.args\"\nexport SEEN=\"$*\"\n", ".args": "set -- from the file\n"})
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	req := &Request{ScopeID: "sh", Shell: Shell{Name: "sh", Path: "/bin/sh"}}
	l := Launch{Argv: []string{"/bin/sh", "-lc", `printf '%s|%s\n' "$SEEN" "$*"`, "zero", "one"}, Cwd: home, Env: loginEnv(home)}
	p, err := c.Prepare(context.Background(), req, l)
	if err != nil || p.Receipt.Outcome != OutcomeFallback || !strings.Contains(p.Receipt.Reason, "exit status: 125") {
		t.Fatalf("Prepare() = %+v, %v; want a fallback, the capture exiting 125", p.Receipt, err)
	}
	if got := shLoginProbe(t, home, loginEnv(home), l.Argv[2], l.Argv[3:]...); got != "from the file|from the file\n" {
		t.Errorf("login = %q: the profile's set -- reaches the command", got)
	}
}

// TestShReadSourceSkipsSpecialFiles: a profile may source a FIFO or
// /dev/stdin; the server reads only regular files for their functions, and
// never waits on one.
func TestShReadSourceSkipsSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := shReadSource(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("shReadSource(FIFO) read it, want an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shReadSource(FIFO) is waiting for a writer")
	}
	if _, err := shReadSource("/dev/null"); err == nil {
		t.Errorf("shReadSource(/dev/null) read it, want an error")
	}
}
