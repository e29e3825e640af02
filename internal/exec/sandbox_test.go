package exec

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/snapexec/snapexec/internal/sandbox"
	"golang.org/x/sys/unix"
)

// sandboxManager is testManager with a sandbox of this kernel; the test is
// skipped where the kernel cannot enforce one.
func sandboxManager(t *testing.T) *Manager {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	t.Cleanup(func() { _ = sb.Close() })
	if err := sb.Check(sandbox.Policy{ReadOnly: true, Network: sandbox.NetworkNone}); err != nil {
		t.Skipf("this kernel cannot sandbox: %v", err)
	}
	return NewManager(Options{Reaper: testReaper, Sandbox: sb})
}

// TestSandboxConfinesWrites: a command writes beneath its writable root and
// nowhere else, and its grandchild neither; the process reports Landlock.
func TestSandboxConfinesWrites(t *testing.T) {
	m := sandboxManager(t)
	inside, outside := t.TempDir(), t.TempDir()
	script := fmt.Sprintf(`echo in > %[1]s/f; echo out > %[2]s/f; sh -c 'echo grand > %[2]s/g'; sh -c 'echo grand > %[1]s/g'`, inside, outside)
	p, err := m.Start(Spec{Argv: []string{"/bin/sh", "-c", script}, Sandbox: sandbox.Policy{WritableRoots: []string{inside}}})
	if err != nil {
		t.Fatalf("Start error %v", err)
	}
	res := p.Result()
	for _, name := range []string{"f", "g"} {
		if _, err := os.Stat(filepath.Join(inside, name)); err != nil {
			t.Errorf("inside/%s: %v; the writable root must be writable", name, err)
		}
		if _, err := os.Stat(filepath.Join(outside, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("outside/%s exists (%v); a sandboxed command wrote outside its roots", name, err)
		}
	}
	// Refused by the read-only mounts (EROFS), or by Landlock (EACCES) where
	// the server cannot make mount namespaces.
	stderr := string(res.Stderr.Data)
	if n := strings.Count(stderr, "Read-only file system") + strings.Count(stderr, "Permission denied"); n != 2 {
		t.Errorf("stderr = %q, want 2 writes refused", stderr)
	}
	if got := p.Info().Sandbox; got.Type != sandbox.TypeLandlock || got.ABI < sandbox.MinLandlockABI {
		t.Errorf("Info().Sandbox = %+v, want landlock with ABI >= %d", got, sandbox.MinLandlockABI)
	}
}

// TestSandboxNetworkNone: a connect to a listener this test holds on
// 127.0.0.1 succeeds unsandboxed and fails with network none.
func TestSandboxNetworkNone(t *testing.T) {
	m := sandboxManager(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := []string{"/bin/bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)}
	for _, tt := range []struct {
		policy sandbox.Policy
		want   string
	}{
		{sandbox.Policy{}, "connected\n"},
		{sandbox.Policy{Network: sandbox.NetworkNone}, ""},
		{sandbox.Policy{Network: sandbox.NetworkLoopback}, ""},
	} {
		res := run(t, m, Spec{Argv: connect, Sandbox: tt.policy})
		if got := string(res.Stdout.Data); got != tt.want {
			t.Errorf("connect to the test's listener with %+v: stdout %q, stderr %q; want stdout %q", tt.policy, got, res.Stderr.Data, tt.want)
		}
	}
}

// TestSandboxRefusedRunsNothing: a policy the manager cannot enforce is
// refused with what is missing, before anything runs.
func TestSandboxRefusedRunsNothing(t *testing.T) {
	old := sandbox.New(sandbox.Options{Probe: func() sandbox.Support { return sandbox.Support{LandlockABI: 4} }})
	t.Cleanup(func() { _ = old.Close() })
	managers := map[string]*Manager{
		"no sandbox":     NewManager(Options{Reaper: testReaper}),
		"Landlock ABI 4": NewManager(Options{Reaper: testReaper, Sandbox: old}),
	}
	for name, m := range managers {
		t.Run(name, func(t *testing.T) {
			sentinel := filepath.Join(t.TempDir(), "ran")
			spec := Spec{Argv: []string{"/bin/sh", "-c", "touch " + sentinel}, Sandbox: sandbox.Policy{ReadOnly: true}}
			_, err := m.Start(spec)
			var ue *sandbox.UnavailableError
			if !errors.As(err, &ue) || len(ue.Missing) == 0 {
				t.Errorf("Start = %v, want a *sandbox.UnavailableError naming what is missing", err)
			}
			if _, err := m.Spawn(spec); !errors.Is(err, sandbox.ErrUnavailable) {
				t.Errorf("Spawn = %v, want sandbox.ErrUnavailable", err)
			}
			if _, err := m.Hold(spec); !errors.Is(err, sandbox.ErrUnavailable) {
				t.Errorf("Hold = %v, want sandbox.ErrUnavailable", err)
			}
			if _, err := os.Stat(sentinel); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the sentinel exists (%v): a refused command ran", err)
			}
			if n := len(m.List()); n != 0 {
				t.Errorf("the table holds %d processes after refusals", n)
			}
			// The zero policy needs no sandbox.
			if p, err := m.Run(t.Context(), Spec{Argv: []string{"true"}}); err != nil || p.Info().Sandbox.Type != sandbox.TypeNone {
				t.Errorf("Run(unsandboxed) = %v, %v; want it run, reporting sandbox none", err, p)
			}
		})
	}
}

// TestSandboxMissingRoot: a writable root that does not exist is the
// request's fault, a *sandbox.FieldError naming it.
func TestSandboxMissingRoot(t *testing.T) {
	m := sandboxManager(t)
	_, err := m.Start(Spec{Argv: []string{"true"}, Sandbox: sandbox.Policy{WritableRoots: []string{"/tmp", "/nonexistent-root"}}})
	var fe *sandbox.FieldError
	if !errors.As(err, &fe) || fe.Field != "sandbox.writableRoots[1]" {
		t.Errorf("Start = %v, want a *sandbox.FieldError for sandbox.writableRoots[1]", err)
	}
}

// TestSandboxedTerminalIsItsOwn: a command that confines files, started on a
// terminal, finds its terminal by name (tty) in a /dev/pts that holds it
// alone, and cannot open a terminal of the host's (one this test opened, as
// an SSH session's would be); it still opens new terminals, as script(1)
// does. Unconfined, the same command writes to the host's terminal.
func TestSandboxedTerminalIsItsOwn(t *testing.T) {
	m := sandboxManager(t)
	// A terminal of the host's whose name no terminal of the command's has
	// (its own is /dev/pts/0, script's /dev/pts/1).
	var master, other *os.File
	for other == nil || other.Name() == "/dev/pts/0" || other.Name() == "/dev/pts/1" {
		var err error
		if master, other, err = pty.Open(); err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		defer other.Close()
	}
	script := "tty; echo /dev/pts/*; echo typed > " + other.Name() + " && echo reached; " +
		"script -qc 'tty' /dev/null | tr -d '\\r'"
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, tt := range []struct {
		policy  sandbox.Policy
		want    *regexp.Regexp
		reached bool
	}{
		{sandbox.Policy{ReadOnly: true, Network: sandbox.NetworkNone},
			regexp.MustCompile(`^/dev/pts/0\n/dev/pts/0 /dev/pts/ptmx\n[^\n]*` + regexp.QuoteMeta(other.Name()) + `: (No such file or directory|Permission denied)\n/dev/pts/1\n$`), false},
		{sandbox.Policy{Network: sandbox.NetworkNone},
			regexp.MustCompile(`^/dev/pts/\d+\n(/dev/pts/\d+ )+/dev/pts/ptmx\nreached\n/dev/pts/\d+\n$`), true},
	} {
		p, err := m.Start(ttySpec(Spec{Argv: []string{"sh", "-c", script}, Env: env, Sandbox: tt.policy}, 80, 24))
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		out := strings.ReplaceAll(string(p.Result().Stdout.Data), "\r\n", "\n")
		if !tt.want.MatchString(out) {
			t.Errorf("under %+v the terminal showed %q, want %s", tt.policy, out, tt.want)
		}
		buf, n := make([]byte, 64), 0
		if ready, _ := unix.Poll([]unix.PollFd{{Fd: int32(master.Fd()), Events: unix.POLLIN}}, 100); ready > 0 {
			n, _ = master.Read(buf)
		}
		if reached := strings.Contains(string(buf[:n]), "typed"); reached != tt.reached {
			t.Errorf("under %+v the host's terminal got %q", tt.policy, buf[:n])
		}
	}
}
