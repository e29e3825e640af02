package shellsnap

import (
	"bytes"
	"context"
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
	home := b.TempDir()
	profile := filepath.Join(home, "profile.sh")
	if err := os.WriteFile(profile, []byte(strings.Replace(heavyProfile(), "sleep 0.2\n", "", 1)), 0o600); err != nil {
		b.Fatal(err)
	}
	f := &SessionFiles{}
	b.Cleanup(f.Close)
	env := loginEnv(home)
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
