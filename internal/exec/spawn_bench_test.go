package exec

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSpawnTrue compares Manager.Run of /bin/true with os/exec's Run of
// the same, side by side: the difference is what supervision costs a command.
// Besides the wall time it reports the CPU this process spends per spawn
// (cpu-ns/op), which on a busy machine is the cost that matters: the child's
// own CPU is not in it.
func BenchmarkSpawnTrue(b *testing.B) {
	b.Run("manager", func(b *testing.B) {
		m := NewManager(Options{Reaper: testReaper})
		defer reportCPU(b)()
		for b.Loop() {
			p, err := m.Run(context.Background(), Spec{Argv: []string{"/bin/true"}})
			if err != nil || p.Result().Status != StatusExited {
				b.Fatalf("Run(/bin/true) = %v, %v", p, err)
			}
		}
	})
	b.Run("os-exec", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU starts counting this process's CPU time; the function it returns
// reports it per op as cpu-ns/op.
func reportCPU(b *testing.B) func() {
	before := selfCPU(b)
	return func() {
		b.ReportMetric(float64(selfCPU(b)-before)/float64(b.N), "cpu-ns/op")
	}
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
