package shellsnap

// Real-shell tests: each captures a login shell's state under HOME=t.TempDir(),
// parses it, replays a probe script and compares what the probe prints. zsh is
// not optional: without it these tests fail rather than skip.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testShell is a shell under test: its name for CaptureScript and Replay, and
// its path.
type testShell struct {
	name, path string
}

// shellsUnderTest returns bash, zsh and sh (dash on Debian).
func shellsUnderTest(t testing.TB) []testShell {
	t.Helper()
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatalf("zsh is required by the shell snapshot tests: %v", err)
	}
	return []testShell{{"bash", "/bin/bash"}, {"zsh", zsh}, {"sh", "/bin/sh"}}
}

// shellByName returns the shell of shellsUnderTest called name.
func shellByName(t testing.TB, name string) testShell {
	t.Helper()
	for _, sh := range shellsUnderTest(t) {
		if sh.name == name {
			return sh
		}
	}
	t.Fatalf("no shell %q under test", name)
	return testShell{}
}

// writeHomeFiles writes files, named relative to home.
func writeHomeFiles(t testing.TB, home string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loginEnv is the environment of every capture and replay here.
func loginEnv(home string) map[string]string {
	return map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
}

// envPairs turns env into NAME=VALUE strings in a stable order.
func envPairs(env map[string]string) []string {
	pairs := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		pairs = append(pairs, name+"="+env[name])
	}
	return pairs
}

// captureLogin runs sh's capture script as [path, "-lc", script] in home with
// loginEnv and parses its output.
func captureLogin(t testing.TB, sh testShell, home string) *Snapshot {
	t.Helper()
	script, ok := CaptureScript(sh.name)
	if !ok {
		t.Fatalf("CaptureScript(%q) = _, false, want a script", sh.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh.path, "-lc", script)
	cmd.Env = envPairs(loginEnv(home))
	cmd.Dir = home
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -lc <capture script>: %v\nstderr:\n%s", sh.path, err, stderr.String())
	}
	snap, err := Parse(out, nil)
	if err != nil {
		t.Fatalf("Parse(%s capture) error = %v\noutput:\n%q", sh.name, err, out)
	}
	return snap
}

// replayRun replays snap for [path, "-lc", script, args...] with loginEnv as
// request and capture env, runs the result in home and returns its stdout and
// stderr.
func replayRun(t testing.TB, sh testShell, home string, snap *Snapshot, script string, args ...string) (stdout, stderr string) {
	t.Helper()
	env := loginEnv(home)
	argv, replayEnv := Replay(ReplayInput{
		Snapshot:   snap,
		Shell:      sh.name,
		Command:    append([]string{sh.path, "-lc", script}, args...),
		Env:        env,
		RequestEnv: env,
		CaptureEnv: env,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = envPairs(replayEnv)
	cmd.Dir = home
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("replayed %s %q: %v\nstdout:\n%s\nstderr:\n%s", sh.name, script, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

func TestReplayRestoresLoginShell(t *testing.T) {
	tests := []struct {
		name  string
		shell string
		files map[string]string
		probe string
		args  []string
		want  string
		// Minimum counts: zsh adds built-in aliases and options of its own.
		wantFunctions, wantAliases, wantOptions int
	}{
		{
			name:  "bash",
			shell: "bash",
			files: map[string]string{
				".bash_profile": `echo "bash_profile noise"
export PROFILE_VAR=from-profile
export PATH="$HOME/bin:$PATH"
umask 0027
`,
				".bashrc": `shopt -s extglob expand_aliases
set -o pipefail -o noclobber
alias greet='echo alias-ok'
alias quoted='echo "it'"'"'s"'
profile_helper() { echo function-ok; }
is_ab() { case $1 in @(a|b)) echo extglob-ok ;; *) echo extglob-bad ;; esac; }
grep() { echo shadowed; }
awk() { echo shadowed; }
sed() { echo shadowed; }
`,
			},
			probe: `greet
quoted
profile_helper
is_ab a
echo "umask=$(umask)"
[[ -o pipefail ]] && echo pipefail-on
[[ -o noclobber ]] && echo noclobber-on
shopt -q extglob && echo extglob-on
echo "var=$PROFILE_VAR"
case ":$PATH:" in *":$HOME/bin:"*) echo path-ok ;; *) echo "path-bad=$PATH" ;; esac
echo "args=$0 $1"
`,
			args: []string{"argzero", "one"},
			want: "alias-ok\nit's\nfunction-ok\nextglob-ok\numask=0027\npipefail-on\nnoclobber-on\nextglob-on\n" +
				"var=from-profile\npath-ok\nargs=argzero one\n",
			wantFunctions: 5, wantAliases: 2, wantOptions: 7,
		},
		{
			name:  "bash, the seed's recovered profile",
			shell: "bash",
			files: map[string]string{".bashrc": "printf x >> \"$HOME/captures\"\nprofile_helper() { printf recovered; }\n"},
			probe: "profile_helper",
			want:  "recovered",

			wantFunctions: 1,
		},
		{
			name:  "zsh",
			shell: "zsh",
			files: map[string]string{
				".zprofile": `echo "zprofile noise"
export PROFILE_VAR=from-profile
path=("$HOME/bin" $path)
umask 027
`,
				".zshrc": `setopt extendedglob pipefail
unsetopt nomatch
alias greet='echo alias-ok'
alias -g SHOUT='| tr a-z A-Z'
fpath=("$HOME/zfuncs" $fpath)
autoload -Uz lazy_helper
profile_helper() { echo function-ok; }
sed() { echo shadowed; }
`,
				"zfuncs/lazy_helper": "echo autoload-ok\n",
			},
			probe: `greet
echo global-alias-ok SHOUT
profile_helper
lazy_helper
echo "umask=$(umask)"
[[ -o extendedglob ]] && echo extendedglob-on
[[ -o pipefail ]] && echo pipefail-on
[[ -o nomatch ]] || echo nomatch-off
echo "var=$PROFILE_VAR"
case ":$PATH:" in (*":$HOME/bin:"*) echo path-ok ;; (*) echo "path-bad=$PATH" ;; esac
echo "args=$0 $1"
`,
			args: []string{"argzero", "one"},
			want: "alias-ok\nGLOBAL-ALIAS-OK\nfunction-ok\nautoload-ok\numask=027\nextendedglob-on\npipefail-on\nnomatch-off\n" +
				"var=from-profile\npath-ok\nargs=argzero one\n",
			wantFunctions: 3, wantAliases: 2, wantOptions: 3,
		},
		{
			name:  "sh",
			shell: "sh",
			files: map[string]string{
				".profile": `echo "profile noise"
export PROFILE_VAR=from-profile
export PATH="$HOME/bin:$PATH"
export ENV="$HOME/.shrc"
umask 0077
`,
				".shrc": `set -o noclobber
alias greet='echo alias-ok'
alias quoted='echo "it'"'"'s"'
alias multiline='echo one
echo two=2'
`,
			},
			probe: `greet
quoted
multiline
echo "umask=$(umask)"
case $- in *C*) echo noclobber-on ;; esac
echo "var=$PROFILE_VAR"
case ":$PATH:" in *":$HOME/bin:"*) echo path-ok ;; *) echo "path-bad=$PATH" ;; esac
echo "args=$0 $1"
`,
			args: []string{"argzero", "one"},
			want: "alias-ok\nit's\none\ntwo=2\numask=0077\nnoclobber-on\nvar=from-profile\npath-ok\nargs=argzero one\n",

			wantAliases: 3, wantOptions: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh := shellByName(t, tt.shell)
			home := t.TempDir()
			writeHomeFiles(t, home, tt.files)
			snap := captureLogin(t, sh, home)
			if snap.FunctionCount < tt.wantFunctions || snap.AliasCount < tt.wantAliases || snap.OptionCount < tt.wantOptions {
				t.Errorf("Parse(%s capture) functions, aliases, options = %d, %d, %d, want at least %d, %d, %d\nstate:\n%s",
					sh.name, snap.FunctionCount, snap.AliasCount, snap.OptionCount, tt.wantFunctions, tt.wantAliases, tt.wantOptions, snap.State)
			}
			stdout, stderr := replayRun(t, sh, home, snap, tt.probe, tt.args...)
			if stdout != tt.want || stderr != "" {
				t.Errorf("replayed %s probe = stdout %q, stderr %q, want stdout %q, stderr empty\nstate:\n%s", sh.name, stdout, stderr, tt.want, snap.State)
			}
		})
	}
}

func TestReplayHidesState(t *testing.T) {
	files := map[string]string{
		".bashrc":  "hidden_helper() { echo helper; }\n",
		".zshrc":   "hidden_helper() { echo helper; }\n",
		".profile": "export ENV=\"$HOME/.shrc\"\n",
		".shrc":    "alias hidden_alias='echo helper'\n",
	}
	// env shows a child's environment, set the shell's own variables, and the
	// glob /proc/$$/fd/* the shell's descriptors (a builtin, so that no fork's
	// synchronisation pipe shows up; the glob's own directory descriptor does).
	const fdProbe = "echo /proc/$$/fd/*\necho ---env\n"
	const probe = fdProbe + "env\necho ---set\nset\necho ---end\n"
	for _, sh := range shellsUnderTest(t) {
		t.Run(sh.name, func(t *testing.T) {
			home := t.TempDir()
			writeHomeFiles(t, home, files)
			snap := captureLogin(t, sh, home)
			stdout, stderr := replayRun(t, sh, home, snap, probe)
			// The test process may itself have inherited descriptors, so the
			// replay must open none beyond those of a plain "sh -c".
			plain, err := exec.Command(sh.path, "-c", fdProbe).Output()
			if err != nil {
				t.Fatalf("%s -c %q: %v", sh.path, fdProbe, err)
			}
			wantFDs, _, _ := strings.Cut(string(plain), "---env\n")
			fds, rest, _ := strings.Cut(stdout, "---env\n")
			if fds, wantFDs := descriptorNumbers(fds), descriptorNumbers(wantFDs); !slices.Equal(fds, wantFDs) {
				t.Errorf("replayed %s: descriptors of the shell = %q, want %q as without a replay", sh.name, fds, wantFDs)
			}
			if !strings.HasSuffix(rest, "---end\n") {
				t.Fatalf("replayed %s probe = stdout %q, stderr %q, want output ending in ---end", sh.name, stdout, stderr)
			}
			for line := range strings.SplitSeq(rest, "\n") {
				if strings.HasPrefix(line, StateEnvPrefix) {
					t.Errorf("replayed %s: user command sees %.80q", sh.name, line)
				}
			}
		})
	}
}

// descriptorNumbers turns the glob /proc/PID/fd/* into its descriptor numbers.
func descriptorNumbers(glob string) []string {
	fields := strings.Fields(glob)
	for i, f := range fields {
		fields[i] = filepath.Base(f)
	}
	return fields
}

func TestReplayRestoresLargeState(t *testing.T) {
	payload := strings.Repeat("x", 1000)
	var functions, aliases strings.Builder
	for i := range 470 {
		fmt.Fprintf(&functions, "big_fn_%03d() { echo \"%03d %s\"; }\n", i, i, payload)
		fmt.Fprintf(&aliases, "alias big_alias_%03d='echo %03d %s'\n", i, i, payload)
	}
	tests := []struct {
		shell string
		files map[string]string
		probe string
	}{
		{"bash", map[string]string{".bashrc": functions.String()}, "big_fn_000 | cut -c1-3\nbig_fn_469 | cut -c1-3\n"},
		{"zsh", map[string]string{".zshrc": functions.String()}, "big_fn_000 | cut -c1-3\nbig_fn_469 | cut -c1-3\n"},
		{"sh", map[string]string{".profile": "export ENV=\"$HOME/.shrc\"\n", ".shrc": aliases.String()}, "big_alias_000 | cut -c1-3\nbig_alias_469 | cut -c1-3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			sh := shellByName(t, tt.shell)
			home := t.TempDir()
			writeHomeFiles(t, home, tt.files)
			snap := captureLogin(t, sh, home)
			// Near the 512 KiB capture limit, and far past the 128 KiB that
			// Linux allows one environment string.
			if len(snap.State) < 450_000 || len(snap.State) > MaxSnapshotBytes {
				t.Fatalf("Parse(%s capture) state has %d bytes, want 450000 to %d", sh.name, len(snap.State), MaxSnapshotBytes)
			}
			stdout, stderr := replayRun(t, sh, home, snap, tt.probe)
			if want := "000\n469\n"; stdout != want || stderr != "" {
				t.Errorf("replayed %s with a %d-byte state = stdout %q, stderr %q, want stdout %q, stderr empty", sh.name, len(snap.State), stdout, stderr, want)
			}
		})
	}
}

func TestReplayReportsBrokenState(t *testing.T) {
	const failed = "failed to restore shell snapshot\n"
	tests := []struct {
		name  string
		state string
		// wantStderr is the whole stderr, or with wantSuffix its last line.
		wantStderr string
		wantSuffix bool
	}{
		{name: "last state command fails", state: "# Snapshot file\nfalse\n", wantStderr: failed},
		{name: "syntax error", state: "# Snapshot file\nif then\n", wantStderr: failed, wantSuffix: true},
		{name: "restore output is discarded", state: "# Snapshot file\necho restore-noise\n", wantStderr: ""},
	}
	for _, sh := range shellsUnderTest(t) {
		for _, tt := range tests {
			t.Run(sh.name+"/"+tt.name, func(t *testing.T) {
				home := t.TempDir()
				snap := &Snapshot{State: tt.state, Env: map[string]string{}}
				stdout, stderr := replayRun(t, sh, home, snap, "echo user-ran")
				stderrOK := stderr == tt.wantStderr || tt.wantSuffix && strings.HasSuffix(stderr, "\n"+tt.wantStderr)
				if stdout != "user-ran\n" || !stderrOK {
					t.Errorf("replayed %s with state %q = stdout %q, stderr %q, want stdout %q, stderr %q (suffix %t)",
						sh.name, tt.state, stdout, stderr, "user-ran\n", tt.wantStderr, tt.wantSuffix)
				}
			})
		}
	}
}

func TestCaptureSurvivesHostileProfile(t *testing.T) {
	tests := []struct {
		name  string
		shell string
		files map[string]string
		probe string
		want  string
	}{
		{
			name:  "bash",
			shell: "bash",
			files: map[string]string{".bashrc": `set -euo pipefail
IFS=:
trap 'echo err-trap' ERR
trap 'echo debug-trap' DEBUG
trap 'echo exit-trap' EXIT
shopt -s expand_aliases
alias declare='echo hijacked'
alias printf='echo hijacked'
grep() { echo shadowed; }; wc() { echo 99; }; tr() { :; }; sed() { :; }; awk() { :; }
helper() { echo helper-ok; }
`},
			probe: "helper\n[[ -o errexit && -o nounset && -o pipefail ]] && echo strict-on\n",
			want:  "helper-ok\nstrict-on\n",
		},
		{
			name:  "zsh",
			shell: "zsh",
			files: map[string]string{".zshrc": `setopt ksharrays shwordsplit nounset errexit rcquotes
IFS=:
alias print='echo hijacked'
sed() { :; }; wc() { echo 99; }; tr() { :; }; awk() { :; }; functions() { echo hijacked; }
helper() { echo helper-ok; }
`},
			probe: "helper\n[[ -o ksharrays && -o nounset && -o rcquotes ]] && echo options-on\n",
			want:  "helper-ok\noptions-on\n",
		},
		{
			name:  "sh",
			shell: "sh",
			files: map[string]string{
				".profile": "export ENV=\"$HOME/.shrc\"\n",
				".shrc": `set -eu
IFS=:
trap 'echo exit-trap' EXIT
alias printf='echo hijacked'
alias helper='echo helper-ok'
`,
			},
			probe: "helper\ncase $- in *e*u*|*u*e*) echo strict-on ;; esac\n",
			want:  "helper-ok\nstrict-on\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh := shellByName(t, tt.shell)
			home := t.TempDir()
			writeHomeFiles(t, home, tt.files)
			snap := captureLogin(t, sh, home)
			// Trap output and hijacked builtins would show up as lines of their own.
			for line := range strings.SplitSeq(snap.State, "\n") {
				if strings.HasSuffix(line, "-trap") || line == "hijacked" || line == "99" {
					t.Errorf("Parse(%s capture).State has the line %q:\n%s", sh.name, line, snap.State)
				}
			}
			for name := range snap.Env {
				if strings.HasPrefix(name, "__codex_") || strings.Contains(name, "trap") {
					t.Errorf("Parse(%s capture).Env has %q", sh.name, name)
				}
			}
			stdout, stderr := replayRun(t, sh, home, snap, tt.probe)
			if stdout != tt.want || stderr != "" {
				t.Errorf("replayed %s probe = stdout %q, stderr %q, want stdout %q, stderr empty\nstate:\n%s", sh.name, stdout, stderr, tt.want, snap.State)
			}
		})
	}
}

func TestCaptureScript(t *testing.T) {
	tests := []struct {
		shell  string
		wantOK bool
	}{
		{"bash", true}, {"zsh", true}, {"sh", true},
		{"fish", false}, {"", false}, {"Bash", false}, {"pwsh", false},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			script, ok := CaptureScript(tt.shell)
			if ok != tt.wantOK {
				t.Fatalf("CaptureScript(%q) = _, %t, want %t", tt.shell, ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if !strings.HasSuffix(script, "\nprintf '\\0'\n/usr/bin/env -0\n") || strings.Contains(script, exportMarker) {
				t.Errorf("CaptureScript(%q) = %q, want a script cut at %q that ends with the NUL printf and /usr/bin/env -0", tt.shell, script, exportMarker)
			}
			if !strings.Contains(script, "'"+StateMarker+"'") {
				t.Errorf("CaptureScript(%q) does not print %q", tt.shell, StateMarker)
			}
		})
	}
}
