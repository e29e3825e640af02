// Package snapexec_test tests the repository's own tooling: .ci/check, which
// make test runs first, and .ci/deps, which installs what the tests need.
package snapexec_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckComparesOnlyGeneratedFiles runs .ci/check in a small module whose
// generator also leaves an unrelated untracked file behind, as a test or an
// editor may while make test runs: that must not fail the check, and a
// generated file that changes must.
func TestCheckComparesOnlyGeneratedFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	check, err := os.ReadFile(".ci/check")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		generates string // what the generator writes to x.gen.go
		wantOK    bool
	}{
		{"an unrelated file appears", "package m\n\nconst X = 1\n", true},
		{"a generated file changes", "package m\n\nconst X = 2\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"go.mod":    "module example.com/m\n\ngo 1.26\n",
				"gen.go":    "package m\n\n//go:generate sh gen.sh\n",
				"gen.sh":    "printf '" + strings.ReplaceAll(tt.generates, "\n", `\n`) + "' > x.gen.go\ntouch \"stray-$$.txt\"\n",
				"x.gen.go":  "package m\n\nconst X = 1\n",
				".ci/check": string(check),
			}
			for name, content := range files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"}} {
				if out, err := gitIn(dir, args...); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			cmd := exec.Command(filepath.Join(dir, ".ci", "check"))
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.wantOK {
				t.Errorf(".ci/check when %s: err = %v, want ok %v; output:\n%s", tt.name, err, tt.wantOK, out)
			}
			if !tt.wantOK && !strings.Contains(string(out), "x.gen.go") {
				t.Errorf(".ci/check when %s says:\n%s\nwant it to name x.gen.go", tt.name, out)
			}
		})
	}
}

func gitIn(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// TestDepsWaitsForAptLocks holds dpkg's locks for a moment, as another
// apt-get would, while .ci/deps makes sure of a package: it waits, then
// succeeds, instead of failing at once.
func TestDepsWaitsForAptLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs apt-get")
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs apt-get, as root")
	}
	for _, lock := range []string{"/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock"} {
		holdLock(t, lock, 2*time.Second)
	}
	// zsh is one of the packages make deps installs: installed already, or
	// installed now, as make deps would.
	out, err := exec.Command("./.ci/deps", "zsh").CombinedOutput()
	if err != nil {
		t.Errorf(".ci/deps zsh while apt's locks were held for 2 s: %v\n%s", err, out)
	}
}

// holdLock takes the fcntl write lock apt and dpkg take on path, and lets it
// go after d.
func holdLock(t *testing.T, path string, d time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Skipf("open %s: %v", path, err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		t.Skipf("%s is held by another process already: %v", path, err)
	}
	released := make(chan struct{})
	time.AfterFunc(d, func() { f.Close(); close(released) })
	t.Cleanup(func() { <-released })
}
