package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// requireSupport skips a test the machine cannot run: the sandbox refuses what
// the kernel cannot enforce, which TestUnenforceableRunsNothing covers.
func requireSupport(t *testing.T, s *Sandbox, p Policy) {
	t.Helper()
	if err := s.Check(p); err != nil {
		t.Skipf("this machine cannot enforce %+v: %v", p, err)
	}
}

// bothWays runs test with a sandbox of the running kernel and with one that
// cannot make mount namespaces, which Landlock alone confines.
func bothWays(t *testing.T, test func(t *testing.T, s *Sandbox)) {
	t.Run("mounts", func(t *testing.T) {
		s := newSandbox(t, Options{})
		if err := s.Support().MountErr; err != nil {
			t.Skipf("this machine cannot make mount namespaces: %v", err)
		}
		test(t, s)
	})
	t.Run("landlock alone", func(t *testing.T) {
		test(t, newSandbox(t, Options{Probe: func() Support {
			sup := Probe()
			sup.MountErr = errors.New("simulated")
			return sup
		}}))
	})
}

// refused is the errno of a write outside the roots: the read-only mount's
// when there is one, else Landlock's.
func refused(s *Sandbox) string {
	if s.Support().MountErr == nil {
		return "EROFS"
	}
	return "EACCES"
}

// crossing is the errno of a rename across the roots' boundary: the roots
// are mounts of their own, else Landlock refuses to reparent.
func crossing(s *Sandbox) string {
	if s.Support().MountErr == nil {
		return "EXDEV"
	}
	return "EACCES"
}

func TestWritesStayInsideRoots(t *testing.T) { bothWays(t, testWritesStayInsideRoots) }

func testWritesStayInsideRoots(t *testing.T, s *Sandbox) {
	root, outside := t.TempDir(), t.TempDir()
	existing := filepath.Join(outside, "existing")
	if err := os.WriteFile(existing, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(existing, filepath.Join(root, "link-out")); err != nil {
		t.Fatal(err)
	}
	p := Policy{WritableRoots: []string{root}}
	requireSupport(t, s, p)
	tests := []struct {
		name, path, want string
	}{
		{"inside", filepath.Join(root, "new"), "ok"},
		{"outside", filepath.Join(outside, "new"), refused(s)},
		{"truncating outside", existing, refused(s)},
		{"through a symlink out of the root", filepath.Join(root, "link-out"), refused(s)},
		{"dot-dot out of the root", root + "/../" + filepath.Base(outside) + "/new", refused(s)},
		{"through /proc/self/root", "/proc/self/root" + outside + "/new", refused(s)},
		{"inside through /proc/self/root", "/proc/self/root" + root + "/new2", "ok"},
		{"/dev/null", "/dev/null", "ok"},
		{"/dev/full is no terminal", "/dev/full", "EACCES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, s, p, helperCmd(t, "write", tt.path)); got != tt.want {
				t.Errorf("write %s under %+v = %q, want %q", tt.path, p, got, tt.want)
			}
		})
	}
	// Links and renames across the roots' boundary, either way: the roots
	// are mounts of their own, and Landlock refuses to reparent a file from
	// or to where it may not write.
	inside := filepath.Join(root, "inside")
	if err := os.WriteFile(inside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	moves := []struct {
		mode, from, to, want string
	}{
		{"link", existing, filepath.Join(root, "hard"), "EXDEV"},
		{"link", inside, filepath.Join(outside, "hard"), refused(s)},
		{"rename", inside, filepath.Join(outside, "moved"), crossing(s)},
		{"rename", existing, filepath.Join(root, "moved"), crossing(s)},
		{"rename", inside, filepath.Join(root, "renamed"), "ok"},
	}
	for _, tt := range moves {
		if got := run(t, s, p, helperCmd(t, tt.mode, tt.from, tt.to)); got != tt.want {
			t.Errorf("%s %s %s under %+v = %q, want %q", tt.mode, tt.from, tt.to, p, got, tt.want)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "original\n" {
		t.Errorf("%s = %q after the sandboxed writes, want it unchanged", existing, b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat of the outside file = %v, want not exist", err)
	}
}

func TestReadOnlyWritesOnlyDevNull(t *testing.T) { bothWays(t, testReadOnlyWritesOnlyDevNull) }

func testReadOnlyWritesOnlyDevNull(t *testing.T, s *Sandbox) {
	dir := t.TempDir()
	readable := filepath.Join(dir, "readable")
	if err := os.WriteFile(readable, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Policy{ReadOnly: true}
	requireSupport(t, s, p)
	for path, want := range map[string]string{
		filepath.Join(dir, "new"): refused(s),
		readable:                  refused(s),
		"/dev/null":               "ok",
	} {
		if got := run(t, s, p, helperCmd(t, "write", path)); got != want {
			t.Errorf("write %s under readOnly = %q, want %q", path, got, want)
		}
	}
	// Reading and running programs still work.
	cmd := exec.Command("/bin/sh", "-c", `cat "$1" && mkdir "$2/sub" 2>/dev/null || echo " refused"`, "sh", readable, dir)
	if got := run(t, s, p, cmd); got != "content refused" {
		t.Errorf("sh reading and writing under readOnly = %q, want %q", got, "content refused")
	}
}

func TestGrandchildIsConfined(t *testing.T) {
	s := newSandbox(t, Options{})
	root, outside := t.TempDir(), t.TempDir()
	p := Policy{WritableRoots: []string{root}}
	requireSupport(t, s, p)
	script := `sh -c 'echo in > "$1/in"; echo out > "$2/out" || echo refused' sh "$1" "$2"`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", root, outside)
	if got := run(t, s, p, cmd); got != "refused" {
		t.Errorf("grandchild writing outside printed %q, want refused", got)
	}
	if _, err := os.Stat(filepath.Join(root, "in")); err != nil {
		t.Errorf("grandchild's write inside: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("grandchild's write outside: stat = %v, want not exist", err)
	}
}

// listen opens a TCP listener and a UDP socket on 127.0.0.1 that the test
// closes at its end; the TCP one accepts and closes every connection.
func listen(t *testing.T) (tcp, udp string) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return l.Addr().String(), u.LocalAddr().String()
}

func TestNetworkModes(t *testing.T) {
	s := newSandbox(t, Options{})
	tcp, udp := listen(t)
	tests := []struct {
		network Network
		mode    string
		args    []string
		want    string
	}{
		// Landlock refuses TCP before the empty namespace could; UDP finds
		// no route.
		{NetworkNone, "dial", []string{tcp}, "EACCES"},
		{NetworkNone, "udp", []string{udp}, "ENETUNREACH"},
		{NetworkNone, "selfloop", nil, "EACCES"},
		{NetworkNone, "lo-up", nil, "EPERM"},
		// A private loopback: the command's own servers, not the host's.
		{NetworkLoopback, "dial", []string{tcp}, "ECONNREFUSED"},
		{NetworkLoopback, "selfloop", nil, "ok"},
		{NetworkFull, "dial", []string{tcp}, "ok"},
		{NetworkFull, "udp", []string{udp}, "ok"},
	}
	for _, tt := range tests {
		t.Run(string(tt.network)+"/"+tt.mode, func(t *testing.T) {
			// ReadOnly makes even "full" a Landlock sandbox, whose network
			// must be left alone.
			p := Policy{ReadOnly: true, Network: tt.network}
			requireSupport(t, s, p)
			if got := run(t, s, p, helperCmd(t, tt.mode, tt.args...)); got != tt.want {
				t.Errorf("%s %v under network %s = %q, want %q", tt.mode, tt.args, tt.network, got, tt.want)
			}
		})
	}
}

// Every loopback command has a loopback of its own: a server one runs is not
// reachable from the next.
func TestLoopbacksAreNotShared(t *testing.T) {
	s := newSandbox(t, Options{})
	p := Policy{Network: NetworkLoopback}
	requireSupport(t, s, p)
	first := exec.Command("/bin/sh", "-c", "exec sleep 60")
	if _, err := s.Start(p, first, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { first.Process.Kill(); first.Wait() }()
	firstNS, err := os.Readlink("/proc/" + strconv.Itoa(first.Process.Pid) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	second := exec.Command("/bin/readlink", "/proc/self/ns/net")
	if got := run(t, s, p, second); got == firstNS || got == "" {
		t.Errorf("second loopback command's namespace = %q, want one other than the first's %q", got, firstNS)
	}
}

// Commands with network "none" share one namespace, where abstract Unix
// sockets live; Landlock scopes them to each command's own sandbox.
func TestNoneCommandsCannotMeet(t *testing.T) {
	s := newSandbox(t, Options{})
	p := Policy{Network: NetworkNone}
	requireSupport(t, s, p)
	name := fmt.Sprintf("snapexec-sandbox-test-%d", os.Getpid())
	listener := helperCmd(t, "abstract-listen", name)
	out, err := listener.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(p, listener, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { listener.Process.Kill(); listener.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ok\n" {
		t.Fatalf("listener said %q, %v; want ok", line, err)
	}
	if got := run(t, s, p, helperCmd(t, "abstract-dial", name)); got != "EPERM" {
		t.Errorf("another none command's connect to @%s = %q, want EPERM", name, got)
	}
}

// Sandboxed and plain commands started at once each get their own policy.
func TestConcurrentStarts(t *testing.T) {
	s := newSandbox(t, Options{})
	policies := []struct {
		policy Policy
		want   string
	}{
		{Policy{}, "ok"},
		{Policy{ReadOnly: true}, refused(s)},
		{Policy{Network: NetworkNone}, "ok"},
		{Policy{ReadOnly: true, Network: NetworkLoopback}, refused(s)},
	}
	for _, pp := range policies {
		requireSupport(t, s, pp.policy)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 6 {
				pp := policies[(g+i)%len(policies)]
				path := filepath.Join(dir, fmt.Sprintf("%d-%d", g, i))
				var out strings.Builder
				cmd := helperCmd(t, "write", path)
				cmd.Stdout = &out
				if _, err := s.Start(pp.policy, cmd, nil); err != nil {
					t.Errorf("Start(%+v) = %v", pp.policy, err)
					return
				}
				cmd.Wait()
				if got := strings.TrimSpace(out.String()); got != pp.want {
					t.Errorf("write under %+v = %q, want %q", pp.policy, got, pp.want)
				}
			}
		})
	}
	wg.Wait()
}

func TestSignalsStayInside(t *testing.T) {
	s := newSandbox(t, Options{})
	p := Policy{ReadOnly: true}
	requireSupport(t, s, p)
	if got := run(t, s, p, helperCmd(t, "kill0", strconv.Itoa(os.Getpid()))); got != "EPERM" {
		t.Errorf("kill(server, 0) from the sandbox = %q, want EPERM", got)
	}
}

func TestCapabilitiesDropped(t *testing.T) {
	s := newSandbox(t, Options{})
	if len(s.Support().DropCaps) == 0 {
		t.Skip("the server has no capability to drop")
	}
	p := Policy{Network: NetworkLoopback}
	requireSupport(t, s, p)
	got := run(t, s, p, helperCmd(t, "status", "CapBnd", "CapEff", "NoNewPrivs"))
	var kept uint64
	for c := range uintptr(64) {
		if isKept(c) {
			kept |= 1 << c
		}
	}
	for field := range strings.FieldsSeq(got) {
		name, value, _ := strings.Cut(field, "=")
		if name == "NoNewPrivs" {
			if value != "1" {
				t.Errorf("child's NoNewPrivs = %s, want 1", value)
			}
			continue
		}
		caps, err := strconv.ParseUint(value, 16, 64)
		if err != nil || caps&^kept != 0 {
			t.Errorf("child's %s = %s, want a subset of %x", name, value, kept)
		}
	}
	if !strings.Contains(got, "NoNewPrivs") {
		t.Errorf("status = %q, want NoNewPrivs among it", got)
	}
	// With the host's network, binding a privileged port would be binding
	// the host's: net_bind_service goes too (an adversarial probe's
	// readOnly command bound the host's 127.0.0.1:81).
	for _, c := range []struct {
		p    Policy
		want bool
	}{{Policy{Network: NetworkLoopback}, true}, {Policy{ReadOnly: true}, false}, {Policy{ReadOnly: true, Network: NetworkNone}, true}} {
		requireSupport(t, s, c.p)
		got := run(t, s, c.p, helperCmd(t, "status", "CapEff"))
		_, value, _ := strings.Cut(got, "=")
		caps, err := strconv.ParseUint(value, 16, 64)
		if err != nil || (caps&(1<<unix.CAP_NET_BIND_SERVICE) != 0) != c.want {
			t.Errorf("under %+v the child's CapEff = %s; want net_bind_service %v", c.p, value, c.want)
		}
	}
}

func TestUnenforceableRunsNothing(t *testing.T) {
	older := func() Support { return Support{LandlockABI: 3} }
	noNetns := func() Support {
		sup := Probe()
		sup.NetnsErr = errors.New("simulated")
		return sup
	}
	tests := []struct {
		name    string
		probe   func() Support
		policy  Policy
		missing string
	}{
		{"older ABI", older, Policy{ReadOnly: true}, "Landlock ABI 6 or later (the kernel has ABI 3)"},
		{"no Landlock", func() Support { return Support{} }, Policy{Network: NetworkNone}, "the kernel has none"},
		{"no network namespace", noNetns, Policy{Network: NetworkNone}, `network namespaces for network "none" (simulated)`},
		{"no loopback namespace", noNetns, Policy{Network: NetworkLoopback}, `network namespaces for network "loopback"`},
		{"no capability drop", func() Support {
			sup := Probe()
			sup.CapsErr = errors.New("simulated")
			return sup
		}, Policy{ReadOnly: true}, "dropping the child's capabilities (simulated)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, Options{Probe: tt.probe})
			sentinel := filepath.Join(t.TempDir(), "sentinel")
			cmd := exec.Command("/bin/sh", "-c", `echo ran > "$1"`, "sh", sentinel)
			_, err := s.Start(tt.policy, cmd, nil)
			var unavailable *UnavailableError
			if !errors.As(err, &unavailable) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Start(%+v) = %v, want an *UnavailableError", tt.policy, err)
			}
			if !strings.Contains(err.Error(), tt.missing) {
				t.Errorf("Start(%+v) = %q, want it to name %q", tt.policy, err, tt.missing)
			}
			if cmd.Process != nil {
				t.Errorf("Start(%+v) started pid %d", tt.policy, cmd.Process.Pid)
			}
			if _, err := os.Stat(sentinel); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("sentinel: stat = %v, want not exist", err)
			}
		})
	}
	// What the simulated kernel can do still runs.
	s := newSandbox(t, Options{Probe: noNetns})
	if _, err := s.Start(Policy{}, exec.Command("/bin/true"), nil); err != nil {
		t.Errorf("Start(zero policy) without netns = %v, want nil", err)
	}
}

// The sandbox leaves no trace in the child: argv, environment and open fds
// are those of the same command unsandboxed.
func TestNoTraceInChild(t *testing.T) {
	s := newSandbox(t, Options{})
	p := Policy{WritableRoots: []string{t.TempDir()}, Network: NetworkNone}
	requireSupport(t, s, p)
	// Each run has pipes of its own: their inode numbers differ.
	pipes := regexp.MustCompile(`pipe:\[[0-9]+\]`)
	plain := pipes.ReplaceAllString(run(t, s, Policy{}, helperCmd(t, "trace", "a", "b c")), "pipe")
	confined := pipes.ReplaceAllString(run(t, s, p, helperCmd(t, "trace", "a", "b c")), "pipe")
	if confined != plain {
		t.Errorf("sandboxed child sees\n%s\nwant what the unsandboxed one sees\n%s", confined, plain)
	}
	if !strings.Contains(plain, `"b c"`) {
		t.Errorf("trace = %s, want the argv in it", plain)
	}
}

// The thread that started a sandboxed command never runs anything else: the
// commands started after it, and the server itself, write where they please.
func TestServerStaysUnconfined(t *testing.T) {
	s := newSandbox(t, Options{})
	p := Policy{ReadOnly: true, Network: NetworkNone}
	requireSupport(t, s, p)
	dir := t.TempDir()
	for i := range 20 {
		run(t, s, p, exec.Command("/bin/true"))
		path := filepath.Join(dir, strconv.Itoa(i))
		if got := run(t, s, Policy{}, helperCmd(t, "write", path)); got != "ok" {
			t.Fatalf("unsandboxed write after %d sandboxed commands = %q, want ok", i+1, got)
		}
		if err := os.WriteFile(path+".server", nil, 0o644); err != nil {
			t.Fatalf("the server's own write: %v", err)
		}
	}
}

func TestStartErrors(t *testing.T) {
	s := newSandbox(t, Options{})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		policy Policy
		want   string
	}{
		{"missing root", Policy{WritableRoots: []string{"/nonexistent/root"}}, "sandbox.writableRoots[0]: does not exist"},
		{"root is a file", Policy{WritableRoots: []string{"/tmp", file}}, "sandbox.writableRoots[1]: is not a directory"},
		{"malformed", Policy{Network: "some"}, "sandbox.network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSupport(t, s, Policy{ReadOnly: true})
			cmd := exec.Command("/bin/true")
			_, err := s.Start(tt.policy, cmd, nil)
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start(%+v) = %v, want a *FieldError %q", tt.policy, err, tt.want)
			}
			if cmd.Process != nil {
				t.Errorf("Start(%+v) started a process", tt.policy)
			}
		})
	}
}

func TestReports(t *testing.T) {
	s := newSandbox(t, Options{})
	rep, err := s.Start(Policy{Network: NetworkFull}, exec.Command("/bin/true"), nil)
	if err != nil || rep != (Report{Type: TypeNone}) {
		t.Errorf("Start(full network only) = %+v, %v; want type none", rep, err)
	}
	p := Policy{ReadOnly: true}
	requireSupport(t, s, p)
	cmd := exec.Command("/bin/true")
	rep, err = s.Start(p, cmd, nil)
	if err != nil || rep.Type != TypeLandlock || rep.ABI < MinLandlockABI {
		t.Errorf("Start(readOnly) = %+v, %v; want type landlock with the kernel's ABI", rep, err)
	}
	if err == nil {
		cmd.Wait()
	}
}

// TestAdmitKeepsRootsOffPrivateDirs: a request's writable root that is, holds
// or lies beneath one of the server's private directories, also through a
// symbolic link, is refused with a *FieldError naming it; other roots pass,
// and Check alone (a spawn's, whose session directory the server put there)
// passes a root beneath one.
func TestAdmitKeepsRootsOffPrivateDirs(t *testing.T) {
	base := t.TempDir()
	private := filepath.Join(base, "private")
	beneath := filepath.Join(private, "cmd-1")
	other := filepath.Join(base, "other")
	link := filepath.Join(base, "link")
	for _, dir := range []string{beneath, other} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Options{Private: []string{private}})
	requireSupport(t, s, Policy{ReadOnly: true})
	for _, c := range []struct {
		name  string
		roots []string
		field string // "" for admitted
	}{
		{"the directory", []string{private}, "sandbox.writableRoots[0]"},
		{"a parent", []string{other, base}, "sandbox.writableRoots[1]"},
		{"beneath", []string{beneath}, "sandbox.writableRoots[0]"},
		{"through a link", []string{link}, "sandbox.writableRoots[0]"},
		{"spelt with dots", []string{other + "/../private/."}, "sandbox.writableRoots[0]"},
		{"elsewhere", []string{other}, ""},
	} {
		err := s.Admit(Policy{WritableRoots: c.roots})
		var fe *FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: Admit(%q) = %v, want nil", c.name, c.roots, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Reason, private)):
			t.Errorf("%s: Admit(%q) = %v, want a *FieldError of %s naming %s", c.name, c.roots, err, c.field, private)
		}
	}
	if err := s.Check(Policy{WritableRoots: []string{beneath}}); err != nil {
		t.Errorf("Check(a root beneath a private directory) = %v, want nil: a session's own directory is one", err)
	}
}

// TestStartKeepsRootsOffPrivateDirs: a writable root that is a symbolic
// link, admitted while it led elsewhere, and pointed at a private directory
// before a spawn (a session's later command, a capture whose profile swaps
// it), is refused at that spawn, and nothing the command does writes
// there; the roots the server adds itself (WithWritable) still pass.
func TestStartKeepsRootsOffPrivateDirs(t *testing.T) {
	base := t.TempDir()
	private := filepath.Join(base, "private")
	real := filepath.Join(base, "w", "real")
	link := filepath.Join(base, "w", "link")
	for _, dir := range []string{filepath.Join(private, "cmd-1"), real} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Options{Private: []string{private}})
	p := Policy{WritableRoots: []string{filepath.Join(base, "w"), link}, Network: NetworkNone}
	requireSupport(t, s, p)
	if err := s.Admit(p); err != nil {
		t.Fatalf("Admit(%v) = %v, want nil: the link leads to w/real", p.WritableRoots, err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(private, "planted")
	_, err := s.Start(p, helperCmd(t, "write", planted), nil)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "sandbox.writableRoots[1]" || !strings.Contains(fe.Reason, private) {
		t.Errorf("Start with a root now leading to %s = %v, want a *FieldError of sandbox.writableRoots[1] naming it", private, err)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Errorf("%s was written: a root swapped after Admit reached a private directory", planted)
	}
	scratch := Policy{WritableRoots: p.WritableRoots[:1], Network: NetworkNone}.WithWritable(filepath.Join(private, "cmd-1"))
	if got := run(t, s, scratch, helperCmd(t, "write", filepath.Join(private, "cmd-1", "dump"))); got != "ok" {
		t.Errorf("a write to the server's own root (WithWritable) beneath a private directory = %q, want ok", got)
	}
}

// TestIPCIsNotTheHosts: a sandboxed command, whatever its policy, finds
// none of the host's System V IPC objects (the sandbox's IPC namespace),
// where an unsandboxed one finds them: an adversarial probe's command wrote
// into a root-owned shared memory segment of another process.
func TestIPCIsNotTheHosts(t *testing.T) {
	s := newSandbox(t, Options{})
	if err := s.Support().IPCErr; err != nil {
		t.Skipf("no IPC namespaces: %v", err)
	}
	key := 0x534e4150 + os.Getpid()%4096
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	if got := run(t, s, Policy{}, helperCmd(t, "shmget", strconv.Itoa(key))); got != "ok" {
		t.Fatalf("an unsandboxed command's shmget = %q, want ok: the test's segment is not there", got)
	}
	for _, p := range []Policy{{ReadOnly: true}, {Network: NetworkNone}, {Network: NetworkLoopback}, {WritableRoots: []string{t.TempDir()}}} {
		requireSupport(t, s, p)
		if got := run(t, s, p, helperCmd(t, "shmget", strconv.Itoa(key))); got != "ENOENT" {
			t.Errorf("shmget of the host's segment under %+v = %q, want ENOENT", p, got)
		}
	}
}
