package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// BenchmarkStart measures what confinement adds to starting and reaping
// /bin/true, against the same unconfined. "reexec" is the design Start
// replaces, for comparison: the child is the (Go) test binary as a launcher
// that confines itself with an inherited ruleset and then execs the program.
func BenchmarkStart(b *testing.B) {
	s := New(Options{})
	defer s.Close()
	root := b.TempDir()
	policies := []struct {
		name   string
		policy Policy
	}{
		{"plain", Policy{}},
		{"files", Policy{WritableRoots: []string{root}}},
		{"files+none", Policy{WritableRoots: []string{root}, Network: NetworkNone}},
		{"files+loopback", Policy{WritableRoots: []string{root}, Network: NetworkLoopback}},
	}
	for _, bb := range policies {
		b.Run(bb.name, func(b *testing.B) {
			if err := s.Check(bb.policy); err != nil {
				b.Skip(err)
			}
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				if _, err := s.Start(bb.policy, cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("reexec", func(b *testing.B) {
		p := Policy{WritableRoots: []string{root}}
		if err := s.Check(p); err != nil {
			b.Skip(err)
		}
		self, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			cfg, rules, err := ruleset(p)
			if err != nil {
				b.Fatal(err)
			}
			fd, _, err := cfg.NewRulesetFD(rules...)
			if err != nil {
				b.Fatal(err)
			}
			f := os.NewFile(uintptr(fd), "ruleset")
			cmd := exec.Command(self, "/bin/true")
			cmd.Env = []string{helperVar + "=launch", noExitSleep}
			cmd.ExtraFiles = []*os.File{f}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// launch is the re-exec launcher BenchmarkStart compares Start with: it
// confines itself with the ruleset on fd 3 and execs args.
func launch(args []string) string {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return outcome(err)
	}
	if err := llsys.LandlockRestrictSelf(3, 0); err != nil {
		return outcome(err)
	}
	_ = unix.Close(3)
	return outcome(syscall.Exec(args[0], args, nil))
}
