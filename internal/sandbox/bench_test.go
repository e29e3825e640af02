package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkStart measures what confinement adds to starting and reaping
// /bin/true, against the same unconfined. "reexec" is the design Start
// replaces, for comparison: the child is the (Go) test binary as a launcher
// that confines itself with an inherited ruleset and then execs the program.
//
// "files, landlock alone" is "files" without the mount namespace, what a
// server without CAP_SYS_ADMIN does: the difference is what the read-only
// mounts cost. "files, host's devpts" is "files" without a devpts of the
// command's own (a server that cannot make one): the difference is what the
// command's own /dev/pts costs.
func BenchmarkStart(b *testing.B) {
	s := New(Options{})
	defer s.Close()
	landlockAlone := New(Options{Probe: func() Support {
		sup := Probe()
		sup.MountErr = errors.New("landlock alone")
		return sup
	}})
	defer landlockAlone.Close()
	hostPts := New(Options{Probe: func() Support {
		sup := Probe()
		sup.DevptsErr = errors.New("host's devpts")
		return sup
	}})
	defer hostPts.Close()
	root := b.TempDir()
	policies := []struct {
		name   string
		s      *Sandbox
		policy Policy
	}{
		{"plain", s, Policy{}},
		{"files", s, Policy{WritableRoots: []string{root}}},
		{"files, landlock alone", landlockAlone, Policy{WritableRoots: []string{root}}},
		{"files, host's devpts", hostPts, Policy{WritableRoots: []string{root}}},
		{"files+none", s, Policy{WritableRoots: []string{root}, Network: NetworkNone}},
		{"files+loopback", s, Policy{WritableRoots: []string{root}, Network: NetworkLoopback}},
	}
	for _, bb := range policies {
		s := bb.s
		b.Run(bb.name, func(b *testing.B) {
			if err := s.Check(bb.policy); err != nil {
				b.Skip(err)
			}
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				if _, err := s.Start(bb.policy, cmd, nil); err != nil {
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
			roots, err := s.openRoots(p)
			if err != nil {
				b.Fatal(err)
			}
			fd, err := rulesetOf(p, roots, nil).open()
			closeRoots(roots)
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

// BenchmarkStartBash is BenchmarkStart's spawn with the work of a warm
// snapshot command replayed without a standby shell: bash sources a state of
// 200 functions, 50 aliases and 100 exports, then runs true. Landlock checks
// every file it opens, so the confinement's cost shows here if anywhere.
func BenchmarkStartBash(b *testing.B) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Skip(err)
	}
	s := New(Options{})
	defer s.Close()
	root := b.TempDir()
	var state strings.Builder
	for i := range 200 {
		fmt.Fprintf(&state, "bench_fn_%03d() { local n=%d; echo \"bench_fn_%03d $n $*\"; }\n", i, i, i)
	}
	for i := range 50 {
		fmt.Fprintf(&state, "alias bench_alias_%02d='echo alias_%02d'\n", i, i)
	}
	for i := range 100 {
		fmt.Fprintf(&state, "export PROFILE_VAR_%d=\"profile-value-%d\"\n", i, i)
	}
	stateFile := filepath.Join(root, "state.sh")
	if err := os.WriteFile(stateFile, []byte(state.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bb := range []struct {
		name   string
		policy Policy
	}{
		{"plain", Policy{}},
		{"files", Policy{WritableRoots: []string{root}}},
		{"files+none", Policy{WritableRoots: []string{root}, Network: NetworkNone}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			if err := s.Check(bb.policy); err != nil {
				b.Skip(err)
			}
			for b.Loop() {
				cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1" && true`, "bash", stateFile)
				cmd.Env = []string{"HOME=" + root, "PATH=/usr/bin:/bin"}
				if _, err := s.Start(bb.policy, cmd, nil); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// launch is the re-exec launcher BenchmarkStart compares Start with: it
// confines itself with the ruleset on fd 3 and execs args.
func launch(args []string) string {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return outcome(err)
	}
	if err := landlockRestrictSelf(3); err != nil {
		return outcome(err)
	}
	_ = unix.Close(3)
	return outcome(syscall.Exec(args[0], args, nil))
}
