package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// TestSessionStandbyMatchesFresh runs the same commands in two sessions,
// one whose every command runs fresh (a maxOutputBytes of its own, which
// no standby serves) and one whose every command waits for its standby
// shell: each command must answer the same both ways (stdout, stderr,
// status, exit code, the state's changes), and the second must have run in
// a standby.
func TestSessionStandbyMatchesFresh(t *testing.T) {
	s := newSessionService(t, session.Options{})
	home := t.TempDir()
	var fresh, warm string
	for _, id := range []*string{&fresh, &warm} {
		info, err := s.CreateSession(context.Background(), SessionInput{
			Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home,
			Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
		})
		if err != nil {
			t.Fatal(err)
		}
		*id = info.ID
	}
	// standby: whether the command runs in a standby shell; none serves a
	// state with a DEBUG or RETURN trap (the rest of a fresh command's
	// restore would run them).
	cmds := []struct {
		script  string
		standby bool
	}{
		{`echo "_=$_ lineno=$LINENO zero=${0##*/} args=$# src=${BASH_SOURCE[*]-} fn=${FUNCNAME[*]-} sh=${BASH_SUBSHELL}"`, true},
		{`f() { echo "in f $LINENO ${FUNCNAME[*]}"; }; f; alias g='echo alias'; x=1; declare -A m=([k]=v)`, true},
		{"g\necho $LINENO\nnope-not-a-command; echo \"status $?\"", true},
		{`trap 'echo usr1' USR1; set -o noglob; shopt -s extglob; umask 027`, true},
		{`trap -p; echo *; umask; echo "$-"`, true},
		{`trap 'echo debug' DEBUG`, true},
		{`echo one; echo two`, false},
		{`trap - DEBUG; echo "${BASH_EXECUTION_STRING%%$'\n'*}"`, false},
		{`trap 'echo returning' RETURN; r() { :; }; r; . /dev/null`, true},
		{`trap - RETURN; set -e; echo before; false; echo after`, false},
		{`echo "errexit: $-"; set +e; exit 3`, true},
		{`enable -n echo; echo disabled; type echo | head -1`, true},
		{`enable echo; builtin() { command builtin "$@"; }; echo "defines builtin"`, true},
		{`unset -f builtin; cd /tmp && pushd / >/dev/null; dirs; return 2>&1; echo "after return $?"`, true},
		{`set -u; echo "${undefined_var}"; echo unreached`, true},
		{`echo "$(( 1 / 0 ))"; echo unreached`, true},
		{`exec 3>&-; echo "fd3 closed"; ls /proc/$BASHPID/fd | wc -l`, true},
		{`echo "$SECONDS $_"; ls /proc/$BASHPID/fd | wc -l`, true},
		// The session's own lines against the state's aliases, functions,
		// posix mode and a disabled trap builtin.
		{`shopt -s expand_aliases; alias '{'='echo brace' trap='echo alias'; function . { echo dot; }; echo defined`, true},
		{`alias -p | wc -l; set -o posix; echo "posix $POSIXLY_CORRECT"`, true},
		{`echo "$POSIXLY_CORRECT"; set +o posix; unalias '{' trap; unset -f .; enable -n trap; exit 4`, true},
		{`enable -n; enable trap; echo "${POSIXLY_CORRECT-no posix}"`, true},
	}
	for i, c := range cmds {
		a := runFresh(t, s, fresh, c.script)
		var b SessionExecOutput
		if c.standby {
			b = runWaiting(t, s, warm, c.script)
		} else {
			b = runIn(t, s, warm, c.script, time.Minute)
		}
		if b.Snapshot.Standby != c.standby || a.Snapshot.Standby {
			t.Fatalf("command %d %q: in a standby shell %v, fresh %v; want %v, false", i, c.script, b.Snapshot.Standby, a.Snapshot.Standby, c.standby)
		}
		if got, want := describe(b), describe(a); got != want {
			t.Errorf("command %d %q in a standby:\n%s\nfresh:\n%s", i, c.script, got, want)
		}
	}
}

// runFresh runs script in session id with a maxOutputBytes of its own,
// which no standby shell serves.
func runFresh(t *testing.T, s *Service, id, script string) SessionExecOutput {
	t.Helper()
	out, err := s.SessionExec(context.Background(), id, SessionExecInput{Script: script, Timeout: time.Minute, MaxOutputBytes: 1 << 20})
	if err != nil {
		t.Fatalf("%q: %v", script, err)
	}
	return out
}

// runWaiting runs script in session id once its standby shell waits (at
// most 10 s).
func runWaiting(t *testing.T, s *Service, id, script string) SessionExecOutput {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if info, err := s.Session(id); err != nil || info.Standby {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return runIn(t, s, id, script, time.Minute)
}

// describe is what a client sees of a session command, but its process
// and the session's EXIT trap, which names the command's own files.
func describe(out SessionExecOutput) string {
	r := out.Result
	stdout := regexp.MustCompile(`(?ms)^trap -- .*?__snapexec_end' EXIT$`).ReplaceAll(r.Stdout.Data, []byte("SESSION TRAP"))
	code := -1
	if r.ExitCode != nil {
		code = *r.ExitCode
	}
	return fmt.Sprintf("status %s, exit %d, kept %v %s\nstdout %q\nstderr %q\nchanges %+v, cwd %s",
		r.Status, code, out.Session.StateKept, out.Session.Reason, stdout, r.Stderr.Data, out.Session.Changes, out.Session.Cwd)
}

// TestSessionStandbysAreBounded: at most --standby-shells sessions hold a
// standby shell (a new one ends the one idle the longest), one that waited
// --standby-idle ends.
func TestSessionStandbysAreBounded(t *testing.T) {
	s := newSessionServiceWith(t, session.Options{}, standby.Options{Max: 1, Idle: time.Second})
	a := bashSession(t, s, "a").ID
	waitStandby(t, s, a, true)
	b := bashSession(t, s, "b").ID
	waitStandby(t, s, b, true)
	if info, _ := s.Session(a); info.Standby {
		t.Errorf("session a still holds a standby after b got one; want one standby at most")
	}
	// b's ends after the idle time, and a's command got none.
	waitStandby(t, s, b, false)
	if out := runIn(t, s, a, "true", time.Minute); out.Snapshot.Standby {
		t.Errorf("a's command ran in a standby shell that should have ended")
	}
	waitStandby(t, s, a, true)
}

// waitStandby waits until session id holds a standby shell (want) or none
// (at most 10 s).
func waitStandby(t *testing.T, s *Service, id string, want bool) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		info, err := s.Session(id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Standby == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("session %s: standby never became %v", id, want)
}

// TestSessionCommandsLeaveNoDumpWatch: however a session command ends, the
// watch of its dump (shellsnap.DumpWatch, an inotify instance) goes with
// it, a standby's that was discarded for a fresh start included.
func TestSessionCommandsLeaveNoDumpWatch(t *testing.T) {
	s := newSessionService(t, session.Options{})
	home := t.TempDir()
	dir := filepath.Join(home, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := s.CreateSession(context.Background(), SessionInput{
		Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &dir,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Counted once the first command's watch went (what it left is done
	// before its standby comes); a watch of an earlier test's may go
	// meanwhile, never come.
	waitStandby(t, s, info.ID, true)
	before := inotifyFDs(t)
	for _, c := range []struct {
		name, script string
		timeout      time.Duration
		prepare      func()
	}{
		{name: "in a standby", script: "X=1", timeout: time.Minute},
		{name: "timed out", script: "sleep 30", timeout: 200 * time.Millisecond},
		{name: "its directory replaced", script: "X=2", timeout: time.Minute, prepare: func() {
			// The standby started in the old directory: the command
			// discards it and starts fresh.
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		waitStandby(t, s, info.ID, true)
		if c.prepare != nil {
			c.prepare()
		}
		runIn(t, s, info.ID, c.script, c.timeout)
		// The next standby comes after what the command left was done.
		waitStandby(t, s, info.ID, true)
		if n := inotifyFDs(t); n > before {
			t.Errorf("after a command %s: %d inotify instances open, want at most %d", c.name, n, before)
		}
	}
}

// inotifyFDs counts this process's inotify instances.
func inotifyFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}
