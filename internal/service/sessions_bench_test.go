package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// BenchmarkSessionExec times SessionExec after a state change in a session
// whose first state is a scope's snapshot of a profile of 200 functions, 50
// aliases and 100 exports (make bench's session row without HTTP), and
// reports the process's own duration beside it: the rest is the server's.
// fresh sends each command right after the last one's answer, so it mostly
// starts a shell of its own (the standby is still restoring); standby waits
// for the session's standby shell first, as a client that thinks does.
func BenchmarkSessionExec(b *testing.B) {
	var profile strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&profile, "bench_fn_%03d() { local n=%d; echo \"bench_fn_%03d $n $*\"; }\n", i, i, i)
	}
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&profile, "alias bench_alias_%02d='echo alias_%02d'\n", i, i)
	}
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&profile, "export PROFILE_VAR_%d=\"profile-value-%d\"\n", i, i)
	}
	home := b.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	s := newSessionService(b, session.Options{})
	_, err := s.CreateSession(context.Background(), SessionInput{
		SessionID: "bench", Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}, ScopeID: ptr("bench"),
	})
	if err != nil {
		b.Fatal(err)
	}
	in := SessionExecInput{Script: `echo hi; BENCH_N=$(( ${BENCH_N:-0} + 1 )); if (( BENCH_N % 2 )); then cd /tmp; else cd; fi`, Timeout: time.Minute}
	for _, wait := range []bool{false, true} {
		name := "fresh"
		if wait {
			// A client's think time: the session's standby shell waits.
			name = "standby"
		}
		b.Run(name, func(b *testing.B) {
			var process, answer time.Duration
			standbys := 0
			for b.Loop() {
				if wait {
					b.StopTimer()
					for i := 0; i < 2000; i++ {
						if info, err := s.Session("bench"); err != nil || info.Standby {
							break
						}
						time.Sleep(time.Millisecond)
					}
					b.StartTimer()
				}
				t0 := time.Now()
				out, err := s.SessionExec(context.Background(), "bench", in)
				answer += time.Since(t0)
				if err != nil || !out.Session.StateKept || string(out.Result.Stdout.Data) != "hi\n" {
					b.Fatalf("SessionExec = %+v, %v; want hi, the state kept", out, err)
				}
				if out.Snapshot.Standby {
					standbys++
				}
				process += out.Result.Duration
			}
			b.ReportMetric(float64(answer.Microseconds())/float64(b.N), "answer-µs/op")
			b.ReportMetric(float64(process.Microseconds())/float64(b.N), "process-µs/op")
			b.ReportMetric(float64(standbys)/float64(b.N), "standby/op")
		})
	}
}
