package shellsnap

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkSessionCommand times a session command after a state change in a
// state holding the heavy profile's 200 functions, 50 aliases and 100
// exports (what make bench's session row runs, without the server), and
// reports its parts: writing the command's files (build), the shell
// (restore, script, dump), and reading the dump into the next state
// (finish, the restore file included).
func BenchmarkSessionCommand(b *testing.B) {
	home, profile, f, env := benchSessionHome(b)
	var build, shell, finish, cpu time.Duration
	run := func(state *SessionState, script string) *SessionState {
		t0 := time.Now()
		c, err := f.Command(SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: env, Script: script, State: state})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
		cmd.Env = envPairs(c.Env)
		cmd.Dir = home
		if state != nil && state.Cwd() != "" {
			cmd.Dir = state.Cwd()
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t1 := time.Now()
		err = cmd.Run()
		t2 := time.Now()
		if err != nil {
			b.Fatalf("session command %q: %v, output %q", script, err, out.String())
		}
		next, err := c.Finish(0)
		if err != nil {
			b.Fatalf("session command %q: Finish: %v", script, err)
		}
		if _, err := next.restoreFile(f); err != nil {
			b.Fatal(err)
		}
		build, shell, finish = build+t1.Sub(t0), shell+t2.Sub(t1), finish+time.Since(t2)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return next
	}
	state := run(nil, ". "+quote(profile))
	if n := len(state.names().fns); n != 200 {
		b.Fatalf("state after the profile has %d functions, want 200", n)
	}
	b.Logf("state: %d bytes", state.Size())
	script := `BENCH_N=$(( ${BENCH_N:-0} + 1 )); if (( BENCH_N % 2 )); then cd /tmp; else cd; fi`
	build, shell, finish, cpu = 0, 0, 0, 0
	for b.Loop() {
		state = run(state, script)
	}
	n := float64(b.N)
	b.ReportMetric(float64(build.Microseconds())/n, "build-µs/op")
	b.ReportMetric(float64(shell.Microseconds())/n, "shell-µs/op")
	b.ReportMetric(float64(finish.Microseconds())/n, "finish-µs/op")
	b.ReportMetric(float64(cpu.Microseconds())/n, "shell-cpu-µs/op")
}

// BenchmarkSessionStandby times a session command run in a standby shell
// (SessionLaunch.Standby) of the same state as BenchmarkSessionCommand's,
// from its go-ahead to the shell's end, and reports its parts: the
// go-ahead until the script starts, the script, and the dump at its end
// (to the shell's end, as the server sees it), then reading the dump into
// the next state (finish) and naming the changes (changes).
func BenchmarkSessionStandby(b *testing.B) {
	home, profile, f, env := benchSessionHome(b)
	state := runToState(b, f, SessionLaunch{Shell: Shell{Name: "bash", Path: "/bin/bash"}, Env: env, Script: ". " + quote(profile)}, home)
	script := `BENCH_N=$(( ${BENCH_N:-0} + 1 )); if (( BENCH_N % 2 )); then cd /tmp; else cd; fi`
	var start, run, dump, finish, changes time.Duration
	for b.Loop() {
		b.StopTimer()
		var out bytes.Buffer
		c, cmd, w, err := startStandby(f, home, env, state, &out)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond) // its restore
		b.StartTimer()
		_, goAhead := c.GoAhead(`__t0=$EPOCHREALTIME; ` + script + `; echo "$__t0 $EPOCHREALTIME"`)
		t0 := time.Now()
		w.Write(goAhead)
		w.Close()
		err = cmd.Wait()
		t1 := time.Now()
		if err != nil {
			b.Fatalf("standby: %v, output %q", err, out.String())
		}
		next, err := c.Finish(0)
		t2 := time.Now()
		if err != nil {
			b.Fatalf("Finish: %v (output %q)", err, out.String())
		}
		next.Changes(state)
		t3 := time.Now()
		b.StopTimer()
		var s0, s1 float64
		if _, err := fmt.Sscan(out.String(), &s0, &s1); err != nil {
			b.Fatalf("output %q: %v", out.String(), err)
		}
		at := func(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }
		start += at(s0).Sub(t0)
		run += at(s1).Sub(at(s0))
		dump += t1.Sub(at(s1))
		finish += t2.Sub(t1)
		changes += t3.Sub(t2)
		c.Close()
		state = next
		b.StartTimer()
	}
	n := float64(b.N)
	for name, d := range map[string]time.Duration{"start": start, "script": run, "dump": dump, "finish": finish, "changes": changes} {
		b.ReportMetric(float64(d.Microseconds())/n, name+"-µs/op")
	}
}

// runToState runs l's command to its end in dir and returns the state it
// hands on; one that fails to start, fails or hands on none fails tb.
func runToState(tb testing.TB, f *SessionFiles, l SessionLaunch, dir string) *SessionState {
	tb.Helper()
	c, err := f.Command(l)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	if out, err := runSessionCommand(c, dir); err != nil {
		tb.Fatalf("%q: %v: %s", l.Script, err, out)
	}
	st, err := c.Finish(0)
	if err != nil {
		tb.Fatalf("%q: the state it ends with: %v", l.Script, err)
	}
	return st
}

// runSessionCommand runs c to its end in dir.
func runSessionCommand(c *SessionCommand, dir string) ([]byte, error) {
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env, cmd.Dir = envPairs(c.Env), dir
	return cmd.CombinedOutput()
}

// benchSessionHome is a session benchmark's home, holding the heavy
// profile without its pause, with the session files and login environment
// to run it.
func benchSessionHome(b *testing.B) (home, profile string, f *SessionFiles, env map[string]string) {
	home = b.TempDir()
	profile = filepath.Join(home, "profile.sh")
	if err := os.WriteFile(profile, []byte(strings.Replace(heavyProfile(), "sleep 0.2\n", "", 1)), 0o600); err != nil {
		b.Fatal(err)
	}
	f = &SessionFiles{}
	b.Cleanup(f.Close)
	return home, profile, f, loginEnv(home)
}
