package shellsnap

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
)

// newTestProcs is a manager for a test's own processes, shut down when the
// test ends.
func newTestProcs(t testing.TB) *exec.Manager {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	m := exec.NewManager(exec.Options{Grace: 300 * time.Millisecond, Sandbox: sb})
	t.Cleanup(func() {
		defer sb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
	})
	return m
}

// TestCaptureContract: a capture keeps the reference's contract, its reasons
// and messages included.
func TestCaptureContract(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name       string
		argv       []string
		timeout    time.Duration
		want       string
		wantReason Reason
		wantMsg    string
	}{
		{"stdout only", []string{"/bin/sh", "-c", "echo out; echo err >&2"}, 0, "out\n", "", ""},
		{"env is exact, cwd, stdin is /dev/null", []string{"/bin/sh", "-c", `echo "$ONLY ${HOME-unset} $(pwd) $(wc -c)"`}, 0, "1 unset " + home + " 0\n", "", ""},
		{"exit status", []string{"/bin/sh", "-c", "exit 7"}, 0, "", ReasonNonzeroExit, "shell snapshot capture exited with exit status: 7"},
		{"signal", []string{"/bin/sh", "-c", "kill -9 $$"}, 0, "", ReasonNonzeroExit, "shell snapshot capture exited with signal: 9 (SIGKILL)"},
		{"timeout", []string{"/bin/sh", "-c", "sleep 60"}, 300 * time.Millisecond, "", ReasonTimeout, "shell snapshot capture timed out"},
		{"too large", []string{"/bin/sh", "-c", "yes"}, 0, "", ReasonTooLarge, "shell snapshot exceeds 524288 bytes"},
		{"no command", nil, 0, "", ReasonMissingCommand, "missing shell snapshot command"},
		{"no program", []string{"/no/such/shell", "-c", "true"}, 0, "", ReasonSpawnFailed, ""},
	}
	capture := NewCapturer(newTestProcs(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(tt.timeout, 20*time.Second))
			defer cancel()
			out, err := capture(ctx, tt.argv, home, map[string]string{"ONLY": "1"}, sandbox.Policy{}, false)
			var ce *CaptureError
			switch {
			case tt.wantReason == "" && (err != nil || string(out) != tt.want):
				t.Errorf("capture(%q) = %q, %v; want %q", tt.argv, out, err, tt.want)
			case tt.wantReason != "" && (!errors.As(err, &ce) || ce.Reason != tt.wantReason || (tt.wantMsg != "" && ce.Message != tt.wantMsg)):
				t.Errorf("capture(%q) error = %#v, want reason %s, message %q", tt.argv, err, tt.wantReason, tt.wantMsg)
			}
		})
	}
}

// TestCaptureRunsInTheSandbox: the capture of a sandboxed command runs in
// its sandbox: a login profile that writes outside the writable roots is
// refused, one inside succeeds, and the snapshot is still taken.
func TestCaptureRunsInTheSandbox(t *testing.T) {
	probe := sandbox.New(sandbox.Options{})
	defer probe.Close()
	if err := probe.Check(sandbox.Policy{ReadOnly: true}); err != nil {
		t.Skipf("this kernel cannot sandbox: %v", err)
	}
	home, outside := t.TempDir(), t.TempDir()
	profile := "echo in > $HOME/profile-wrote\necho out > " + outside + "/profile-wrote 2>/dev/null || export WRITE_REFUSED=1\n"
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	l := Launch{Argv: []string{"/bin/bash", "-lc", "true"}, Cwd: home, Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
		Sandbox: sandbox.Policy{WritableRoots: []string{home}, Network: sandbox.NetworkNone}}
	p, err := c.Prepare(context.Background(), bashRequest("sandboxed"), l)
	if err != nil || p.Snapshot == nil {
		t.Fatalf("Prepare = %+v, %v; want a snapshot", p.Receipt, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "profile-wrote")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the profile wrote outside the sandbox's roots during the capture (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(home, "profile-wrote")); err != nil {
		t.Errorf("the profile could not write beneath its writable root: %v", err)
	}
	if p.Snapshot.Env["WRITE_REFUSED"] != "1" {
		t.Errorf("the capture's env lacks WRITE_REFUSED=1: the write outside was not refused")
	}
}

// TestCaptureLeavesNoJob: a background job the profile leaves holding stdout
// has the drain to let go; the capture then succeeds and the job is ended.
func TestCaptureLeavesNoJob(t *testing.T) {
	capture := NewCapturer(newTestProcs(t))
	out, err := capture(context.Background(), []string{"/bin/sh", "-c", "sleep 60 & echo $!"}, t.TempDir(), nil, sandbox.Policy{}, false)
	if err != nil {
		t.Fatalf("capture with a background job = %v", err)
	}
	job, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("capture output %q: %v", out, err)
	}
	waitDead(t, "the background job", job)
}

// TestCaptureIsAnUnlistedProcess: a capture is the manager's (its Shutdown
// ends it at once, with its group) but not in its table, and MaxRunning does
// not hold it back.
func TestCaptureIsAnUnlistedProcess(t *testing.T) {
	m := exec.NewManager(exec.Options{Grace: 300 * time.Millisecond, MaxRunning: 1})
	busy, err := m.Start(exec.Spec{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	done := make(chan error, 1)
	go func() {
		_, err := NewCapturer(m)(context.Background(), []string{"/bin/sh", "-c", `sleep 60 & echo $$ $! > "$1.tmp"; mv "$1.tmp" "$1"; wait`, "sh", pids}, dir, nil, sandbox.Policy{}, false)
		done <- err
	}()
	var shell, job int
	waitFor(t, "the capture to start", func() bool {
		b, err := os.ReadFile(pids)
		if err != nil {
			return false
		}
		f := strings.Fields(string(b))
		shell, _ = strconv.Atoi(f[0])
		job, _ = strconv.Atoi(f[1])
		return true
	})
	if n, running := len(m.List()), m.Running(); n != 1 || running != 1 {
		t.Errorf("with a capture running: List() has %d, Running() = %d; want only the one started: 1 and 1", n, running)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	var ce *CaptureError
	if err := <-done; !errors.As(err, &ce) || ce.Reason != ReasonNonzeroExit {
		t.Errorf("capture ended by Shutdown = %v, want the shell's ending by signal", err)
	}
	for what, pid := range map[string]int{"capture shell": shell, "its job": job} {
		if pidAlive(pid) {
			t.Errorf("%s %d alive after Shutdown returned", what, pid)
		}
	}
	if busy.Result().Status != exec.StatusShutdown {
		t.Errorf("the started process ended %s, want shutdown", busy.Result().Status)
	}
}

// waitDead waits up to 5 s for pid to be gone (or a zombie).
func waitDead(t *testing.T, what string, pid int) {
	t.Helper()
	waitFor(t, what+" to end", func() bool { return !pidAlive(pid) })
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// TestCaptureDumpGoesToItsOwnStdout: a profile that sends its output to a
// log (`exec > >(tee -a ~/out.log)`) or away (`exec >/dev/null`) has there
// what it printed, never the capture's dump (the whole state, environment
// included), and the capture reads its records all the same. A profile that
// takes over a descriptor the capture kept its stdout on gets no dump
// either: the capture fails and the command runs its login shell.
func TestCaptureDumpGoesToItsOwnStdout(t *testing.T) {
	tests := []struct {
		name, shell, file, profile string
		want                       Outcome
	}{
		{"logged", "bash", ".bash_profile", "exec > >(tee -a ~/out.log) 2>&1\necho logged\n", OutcomeUsed},
		{"logged from bashrc", "bash", ".bashrc", "exec > >(tee -a ~/out.log) 2>&1\necho logged\n", OutcomeUsed},
		{"silenced", "bash", ".bash_profile", "exec >/dev/null 2>&1\n", OutcomeUsed},
		// bash gives the capture's {name} redirections 11 and 12, dash has 8 and 9.
		{"descriptor taken", "bash", ".bash_profile", "exec 11>>~/out.log\necho logged >&11\n", OutcomeFallback},
		{"descriptor closed", "bash", ".bashrc", "for fd in {3..20}; do eval \"exec $fd>&-\"; done\n", OutcomeFallback},
		{"logged", "zsh", ".zprofile", "exec > >(tee -a ~/out.log) 2>&1\necho logged\n", OutcomeUsed},
		{"logged from zshrc", "zsh", ".zshrc", "exec > >(tee -a ~/out.log) 2>&1\necho logged\n", OutcomeUsed},
		{"silenced", "zsh", ".zlogin", "exec >/dev/null 2>&1\n", OutcomeUsed},
		{"descriptor closed", "zsh", ".zshrc", "for fd in {3..20}; do exec {fd}>&-; done 2>/dev/null\n", OutcomeFallback},
		{"logged", "sh", ".profile", "exec >>~/out.log 2>&1\necho logged\n", OutcomeUsed},
		{"silenced", "sh", ".profile", "exec >/dev/null 2>&1\n", OutcomeUsed},
		{"descriptor taken", "sh", ".profile", "exec 9>>~/out.log\necho logged >&9\n", OutcomeFallback},
	}
	for _, tt := range tests {
		t.Run(tt.shell+"/"+tt.name, func(t *testing.T) {
			home := t.TempDir()
			p, err := prepareProfile(t, tt.shell, home, tt.file, tt.profile)
			if err != nil || p.Receipt.Outcome != tt.want {
				t.Errorf("Prepare(%s -lc true) = %+v, %v; want %s", tt.shell, p.Receipt, err, tt.want)
			}
			if !strings.Contains(tt.profile, "logged") {
				return
			}
			deadline := time.Now().Add(2 * time.Second)
			b, err := os.ReadFile(filepath.Join(home, "out.log"))
			for string(b) != "logged\n" && time.Now().Before(deadline) { // tee may still be writing
				time.Sleep(20 * time.Millisecond)
				b, err = os.ReadFile(filepath.Join(home, "out.log"))
			}
			if string(b) != "logged\n" {
				t.Errorf("the profile's log after the capture = %.200q, %v; want only what the profile printed", b, err)
			}
		})
	}
}

// TestCaptureNamesDescriptorsTheProfileLeftOpen: a descriptor the startup
// files leave open is an open file of the profile's process, which a replay
// cannot have, so the receipt says partial and names it by number; one they
// open and close again, and the shells' own (zsh maps its .zwc function
// files on descriptors from 10 up), are not named.
func TestCaptureNamesDescriptorsTheProfileLeftOpen(t *testing.T) {
	tests := []struct {
		name, shell, file, profile string
		want                       []string // the descriptors named; none: used
	}{
		{"appended", "bash", ".bash_profile", "exec 3>>~/fd.log\n", []string{"3"}},
		{"read and named", "bash", ".bashrc", "exec 5</dev/null {LOGFD}>>~/fd.log\n", []string{"5", "{LOGFD}"}},
		{"closed again", "bash", ".bash_profile", "exec 4>~/fd.log\necho x >&4\nexec 4>&-\n", nil},
		{"none", "bash", ".bash_profile", "export A=1\n", nil},
		{"appended", "zsh", ".zprofile", "exec 3>>~/fd.log\n", []string{"3"}},
		{"closed again", "zsh", ".zshrc", "exec 4>~/fd.log\nexec 4>&-\n", nil},
		{"autoloaded functions", "zsh", ".zshrc", "autoload -U colors && colors\n", nil},
		{"appended", "sh", ".profile", "exec 3>>~/fd.log\n", []string{"3"}},
		{"read", "sh", ".profile", "exec 7</dev/null\n", []string{"7"}},
		{"closed again", "sh", ".profile", "exec 4>~/fd.log\nexec 4>&-\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.shell+"/"+tt.name, func(t *testing.T) {
			p, err := prepareProfile(t, tt.shell, t.TempDir(), tt.file, tt.profile)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			var want []Piece
			for _, fd := range tt.want {
				if fd == "{LOGFD}" {
					fd = strconv.Itoa(10 + 2) // after the two the capture keeps its stdout on, from 10 up
				}
				want = append(want, Piece{Kind: "descriptor", Name: fd})
			}
			wantOutcome := OutcomeUsed
			if want != nil {
				wantOutcome = OutcomePartial
			}
			if p.Receipt.Outcome != wantOutcome || !slices.Equal(p.Receipt.Unrestored, want) {
				t.Errorf("Prepare(%s) = %s %v; want %s %v", tt.profile, p.Receipt.Outcome, p.Receipt.Unrestored, wantOutcome, want)
			}
		})
	}
}

// prepareProfile prepares `shell -lc true` in a new cache, in home, whose
// startup file file holds profile: the command's receipt of a capture of
// that profile.
func prepareProfile(t *testing.T, shell, home, file, profile string) (Prepared, error) {
	t.Helper()
	sh := shellByName(t, shell)
	writeHomeFiles(t, home, map[string]string{file: profile})
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	req := &Request{ScopeID: "profile", Shell: Shell{Name: shell, Path: sh.path}}
	return c.Prepare(context.Background(), req, Launch{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: loginEnv(home)})
}

// TestCaptureIgnoresBackgroundOutput: a job the startup files leave running
// in the background (an update check, a fortune, a tee of their output)
// may print while the capture dumps the state; what it prints must never
// become part of the records, where a line like a declare statement would
// be restored as a variable of every command (and a flood makes the
// capture too large). The capture succeeds, and the replay has the
// profile's state and nothing the job printed.
func TestCaptureIgnoresBackgroundOutput(t *testing.T) {
	const job = "( while :; do echo 'declare -- INJECTED=\"1\"'; echo 'INJECTED=1'; echo 'typeset INJECTED=1'; done ) &\n"
	tests := []struct{ shell, file, profile string }{
		{"bash", ".bash_profile", job + "helper() { echo helper-ok; }\n"},
		{"zsh", ".zprofile", job + "helper() { echo helper-ok; }\n"},
		{"sh", ".profile", job + "alias helper='echo helper-ok'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			sh := shellByName(t, tt.shell)
			home := t.TempDir()
			writeHomeFiles(t, home, map[string]string{tt.file: tt.profile})
			snap := captureLogin(t, sh, home)
			stdout, stderr := replayRun(t, sh, home, snap, ":\necho ${INJECTED-none}; helper")
			if want := "none\nhelper-ok\n"; stdout != want || stderr != "" {
				t.Errorf("replayed %s = stdout %q, stderr %.300q; want %q and no stderr", tt.shell, stdout, stderr, want)
			}
		})
	}
}

// TestCaptureRefusesAHijackedCommand: a bash profile that defines a function
// named command, through which the dump names every builtin, has no
// snapshot; the capture says so at once (status 125) rather than run its
// dump through the function, which never gave it its stdout back and could
// loop until the capture's timeout. The command runs its login shell.
func TestCaptureRefusesAHijackedCommand(t *testing.T) {
	sh := shellByName(t, "bash")
	home := t.TempDir()
	writeHomeFiles(t, home, map[string]string{".bash_profile": "command() { echo hijacked; }\n"})
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	t.Cleanup(c.Close)
	req := &Request{ScopeID: "hijack", Shell: Shell{Name: "bash", Path: sh.path}}
	p, err := c.Prepare(context.Background(), req, Launch{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: loginEnv(home)})
	const want = "shell snapshot capture exited with exit status: 125"
	if err != nil || p.Receipt.Outcome != OutcomeFallback || p.Receipt.Reason != want {
		t.Errorf("Prepare(bash -lc true) = %+v, %v; want fallback, reason %q", p.Receipt, err, want)
	}
}

// TestZshCaptureWithReadOnlyHistory: startup files hardened as some
// benchmarks advise (a read-only HISTFILE) or that make a hook list
// read-only still have a snapshot: the capture's end cannot unset them,
// which zsh takes for an error that ends the -c string with status 1. It
// still runs no hook and saves no history, in a command's capture and a
// terminal's, and neither does the validation of the restore, which
// restores the read-only hook list.
func TestZshCaptureWithReadOnlyHistory(t *testing.T) {
	sh := shellByName(t, "zsh")
	home := t.TempDir()
	writeHomeFiles(t, home, map[string]string{
		".zshrc": "HISTFILE=~/.zhist; SAVEHIST=100; readonly HISTFILE\nprint -s secret\nbye() { print hooks >>~/exit.log; }\nzshexit_functions=(bye)\nreadonly zshexit_functions\n",
	})
	for _, terminal := range []bool{false, true} {
		c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
		t.Cleanup(c.Close)
		l := Launch{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: loginEnv(home)}
		if terminal {
			l.Argv, l.Terminal = []string{sh.path, "-il"}, true
		}
		p, err := c.Prepare(context.Background(), &Request{ScopeID: "exit", Shell: Shell{Name: "zsh", Path: sh.path}}, l)
		if err != nil || p.Receipt.Outcome != OutcomeUsed {
			t.Fatalf("Prepare(%q) = %+v, %v; want used", l.Argv, p.Receipt, err)
		}
		for _, name := range []string{"exit.log", ".zhist"} {
			if b, err := os.ReadFile(filepath.Join(home, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after the capture of %q, %s = %q, %v; want none", l.Argv, name, b, err)
				_ = os.Remove(filepath.Join(home, name))
			}
		}
	}
}

// TestZshCaptureRunsTrapFunctionsLittle: a profile's TRAPZERR and
// TRAPDEBUG (zsh makes a function of that name the trap as it is defined)
// are the state's; the validation of the restore, which defines the
// functions it checks, must not make them act (TRAPZERR ran at its every
// failed check), and the capture, whose commands after the profile each
// run a DEBUG trap, removes it before it reads every option (which ran it
// some 600 times). A login shell running true runs it a few times.
func TestZshCaptureRunsTrapFunctionsLittle(t *testing.T) {
	sh := shellByName(t, "zsh")
	home := t.TempDir()
	writeHomeFiles(t, home, map[string]string{
		".zprofile": "TRAPZERR() { print zerr >>~/zerr.log; }\nTRAPDEBUG() { print debug >>~/debug.log; }\n",
	})
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	t.Cleanup(c.Close)
	l := Launch{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: loginEnv(home)}
	p, err := c.Prepare(context.Background(), &Request{ScopeID: "traps", Shell: Shell{Name: "zsh", Path: sh.path}}, l)
	if err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Fatalf("Prepare(%q) = %+v, %v; want used", l.Argv, p.Receipt, err)
	}
	if b, err := os.ReadFile(filepath.Join(home, "zerr.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the capture, zerr.log = %q, %v; want none: no command of the capture or its validation may run TRAPZERR", b, err)
	}
	b, _ := os.ReadFile(filepath.Join(home, "debug.log"))
	if n := strings.Count(string(b), "\n"); n > 50 {
		t.Errorf("the capture ran the profile's TRAPDEBUG %d times; want it removed before the dump reads the options (at most 50)", n)
	}
}

// TestZshCaptureRunsNoExitHook: a zsh capture runs the startup files but
// none of what a login shell runs at its exit (the zshexit hooks, a
// TRAPEXIT, .zlogout), which would act once more per capture (an agent
// killed, a log written); the replayed command runs them as its own
// login shell does, once.
func TestZshCaptureRunsNoExitHook(t *testing.T) {
	sh := shellByName(t, "zsh")
	home := t.TempDir()
	writeHomeFiles(t, home, map[string]string{
		".zshrc":   "zshexit() { print hook >>~/exit.log; }\nbye() { print hooks >>~/exit.log; }\nzshexit_functions+=(bye)\nTRAPEXIT() { print trap >>~/exit.log; }\n",
		".zlogout": "print logout >>~/exit.log\n",
	})
	for _, terminal := range []bool{false, true} {
		c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
		t.Cleanup(c.Close)
		l := Launch{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: loginEnv(home)}
		if terminal {
			l.Argv, l.Terminal = []string{sh.path, "-il"}, true
		}
		p, err := c.Prepare(context.Background(), &Request{ScopeID: "exit", Shell: Shell{Name: "zsh", Path: sh.path}}, l)
		if err != nil || p.Receipt.Outcome != OutcomeUsed {
			t.Fatalf("Prepare(%q) = %+v, %v; want used", l.Argv, p.Receipt, err)
		}
		if b, err := os.ReadFile(filepath.Join(home, "exit.log")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after the capture of %q, exit.log = %q, %v; want none", l.Argv, b, err)
			_ = os.Remove(filepath.Join(home, "exit.log"))
		}
	}
}
