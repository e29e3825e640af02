package exec

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkSpawnTrue compares Manager.Run of /bin/true with os/exec's Run of
// the same, side by side: the difference is what supervision costs a command.
func BenchmarkSpawnTrue(b *testing.B) {
	b.Run("manager", func(b *testing.B) {
		m := NewManager(Options{Reaper: testReaper})
		for b.Loop() {
			p, err := m.Run(context.Background(), Spec{Argv: []string{"/bin/true"}})
			if err != nil || p.Result().Status != StatusExited {
				b.Fatalf("Run(/bin/true) = %v, %v", p, err)
			}
		}
	})
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
