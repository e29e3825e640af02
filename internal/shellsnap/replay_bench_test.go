package shellsnap

import (
	"fmt"
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
// 200-function state and runs true, from the restore file a capture writes
// (file, what Replay runs), and, beside it, bash -pc true with no state at
// all.
func BenchmarkReplayTransport(b *testing.B) {
	sh := shellByName(b, "bash")
	home := b.TempDir()
	writeHomeFiles(b, home, map[string]string{".bashrc": heavyProfile()})
	env := loginEnv(home)
	snap := captureLogin(b, sh, home)
	if snap.FunctionCount != 200 {
		b.Fatalf("capture of the heavy profile: FunctionCount = %d, want 200", snap.FunctionCount)
	}
	b.Logf("state: %d bytes, %d functions, %d aliases, %d env vars", snap.StateBytes, snap.FunctionCount, snap.AliasCount, len(snap.Env))

	// What a replay costs: bash --noprofile -lc with BASH_ENV naming the
	// restore file.
	b.Run("file", func(b *testing.B) {
		argv, replayEnv := Replay(ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{sh.path, "-lc", "true"}, Env: env})
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
}
