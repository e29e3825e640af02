package shellsnap

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// heavyProfile is /work/shared/bench/heavy_profile.sh, generated: 0.2 s of
// start-up work, 200 functions, 50 aliases and 100 exports.
func heavyProfile() string {
	var b strings.Builder
	b.WriteString("sleep 0.2\n")
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "bench_fn_%03d() { local n=%d; echo \"bench_fn_%03d $n $*\"; }\n", i, i, i)
	}
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&b, "alias bench_alias_%02d='echo alias_%02d'\n", i, i)
	}
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "export PROFILE_VAR_%d=\"profile-value-%d\"\n", i, i)
	}
	return b.String()
}

// BenchmarkReplayTransport times a replayed bash that restores a real
// 200-function state and runs true: from the restore file a capture of
// this server writes (file, what Replay runs), or a state of the reference's
// format carried by chunked environment variables (env), or by a pipe
// inherited as fd 3 and read with bash's source or with eval "$(cat <&3)";
// and, beside them, the same bash -pc true with no state at all.
func BenchmarkReplayTransport(b *testing.B) {
	sh := shellByName(b, "bash")
	home := b.TempDir()
	writeHomeFiles(b, home, map[string]string{".bashrc": heavyProfile()})
	snap := captureLogin(b, sh, home)
	if snap.FunctionCount != 200 {
		b.Fatalf("Parse(heavy profile capture).FunctionCount = %d, want 200", snap.FunctionCount)
	}
	env := loginEnv(home)
	b.Logf("state: %d bytes, %d functions, %d aliases, %d env vars", len(snap.State), snap.FunctionCount, snap.AliasCount, len(snap.Env))

	b.Run("env", func(b *testing.B) {
		argv, replayEnv := Replay(ReplayInput{
			Snapshot: snap, Shell: "bash", Command: []string{sh.path, "-lc", "true"},
			Env: env, RequestEnv: env, CaptureEnv: env,
		})
		pairs := envPairs(replayEnv)
		for b.Loop() {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = pairs
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				b.Fatalf("replayed bash: %v, output %q", err, out)
			}
		}
	})

	// What a replay of this server's capture costs: bash --noprofile -lc
	// with BASH_ENV naming the restore file.
	b.Run("file", func(b *testing.B) {
		c, err := New(Options{Capture: NewCapturer(newTestProcs(b))})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		l := Launch{Argv: []string{sh.path, "-lc", "true"}, Cwd: home, Env: env}
		req := &Request{ScopeID: "bench", Shell: Shell{Name: "bash", Path: sh.path}}
		p, err := c.Prepare(context.Background(), req, l)
		if err != nil || p.Receipt.Outcome != OutcomeUsed {
			b.Fatalf("Prepare() = %+v, %v; want used", p.Receipt, err)
		}
		argv, replayEnv := Replay(ReplayInput{Snapshot: p.Snapshot, Shell: "bash", Command: l.Argv, Env: env, RequestEnv: env, CaptureEnv: p.CaptureEnv})
		pairs := envPairs(replayEnv)
		for b.Loop() {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = pairs
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				b.Fatalf("replayed bash: %v, output %q", err, out)
			}
		}
	})

	// What the restore itself costs: the same shell and environment, no state.
	b.Run("no-state", func(b *testing.B) {
		pairs := envPairs(env)
		for b.Loop() {
			cmd := exec.Command(sh.path, "-pc", "true")
			cmd.Env = pairs
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				b.Fatalf("bash -pc true: %v, output %q", err, out)
			}
		}
	})

	descriptor := func(restore string) func(b *testing.B) {
		return func(b *testing.B) {
			script := "set +o privileged\nif ! " + restore +
				" >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\nexec 3<&-\ntrue"
			// The pipe variant needs no chunks, only the merged environment.
			_, replayEnv := Replay(ReplayInput{
				Snapshot: snap, Shell: "bash", Command: []string{sh.path, "-lc", "true"},
				Env: env, RequestEnv: env, CaptureEnv: env,
			})
			for name := range replayEnv {
				if strings.HasPrefix(name, StateEnvPrefix) {
					delete(replayEnv, name)
				}
			}
			pairs := envPairs(replayEnv)
			for b.Loop() {
				r, w, err := os.Pipe()
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(sh.path, "-pc", script)
				cmd.Env = pairs
				cmd.ExtraFiles = []*os.File{r}
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				r.Close()
				// A state larger than the pipe buffer needs a concurrent writer.
				written := make(chan error, 1)
				go func() {
					_, err := io.WriteString(w, snap.State)
					w.Close()
					written <- err
				}()
				err = cmd.Wait()
				if werr := <-written; err != nil || werr != nil || out.Len() > 0 {
					b.Fatalf("bash with the state on fd 3: %v, write %v, output %q", err, werr, out.String())
				}
			}
		}
	}
	b.Run("fd-source", descriptor("source /dev/fd/3"))
	b.Run("fd-eval-cat", descriptor(`eval "$(cat <&3)"`))
}
