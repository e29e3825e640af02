package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// skipWithoutSandbox skips a test on a kernel that cannot enforce sandboxes.
func skipWithoutSandbox(t *testing.T) {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	defer sb.Close()
	if err := sb.Check(sandbox.Policy{ReadOnly: true, Network: sandbox.NetworkNone}); err != nil {
		t.Skipf("this kernel cannot sandbox: %v", err)
	}
}

// sandboxSupport is what a server run by this test can enforce.
func sandboxSupport(t *testing.T) sandbox.Support {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	defer sb.Close()
	return sb.Support()
}

// TestSandboxOverHTTP: the sandbox of /exec and /processes confines the
// command and its grandchild to the writable roots (EROFS outside), network
// none cannot reach a listener of this test on 127.0.0.1, a snapshot capture
// writes nothing outside either, and the answers say how each ran.
func TestSandboxOverHTTP(t *testing.T) {
	skipWithoutSandbox(t)
	s := startServer(t, nil)
	inside, outside := t.TempDir(), t.TempDir()
	roots := map[string]any{"writableRoots": []string{inside}}

	script := fmt.Sprintf(`echo in > %[1]s/f; echo out > %[2]s/f; sh -c 'echo grand > %[2]s/g; echo grand > %[1]s/g'`, inside, outside)
	code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"/bin/sh", "-c", script}, "sandbox": roots})
	if code != http.StatusOK {
		t.Fatalf("POST /exec = %d %v", code, got)
	}
	// Refused by the read-only mounts (EROFS), or by Landlock (EACCES) where
	// the server cannot make mount namespaces.
	stderr := fmt.Sprint(got["stderr"])
	if n := strings.Count(stderr, "Read-only file system") + strings.Count(stderr, "Permission denied"); n != 2 {
		t.Errorf("stderr = %q, want two writes outside refused", stderr)
	}
	for _, name := range []string{"f", "g"} {
		if _, err := os.Stat(filepath.Join(outside, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("outside/%s exists (%v): the sandbox let a write out", name, err)
		}
		if _, err := os.Stat(filepath.Join(inside, name)); err != nil {
			t.Errorf("inside/%s: %v; the writable root was not writable", name, err)
		}
	}
	if sb, _ := got["sandbox"].(map[string]any); sb["type"] != "landlock" || sb["abi"].(float64) < sandbox.MinLandlockABI {
		t.Errorf("sandbox = %v, want landlock with abi >= %d", got["sandbox"], sandbox.MinLandlockABI)
	}
	if mountErr := sandboxSupport(t).MountErr; mountErr == nil {
		// Metadata outside the roots stays as it was too, root or not.
		kept := filepath.Join(outside, "kept")
		if err := os.WriteFile(kept, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("chmod 4777 %[1]s; chown nobody %[1]s; touch -d 2001-01-01 %[1]s; echo done", kept)
		_, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"/bin/sh", "-c", script}, "sandbox": roots})
		if n := strings.Count(fmt.Sprint(got["stderr"]), "Read-only file system"); n != 3 || got["stdout"] != "done\n" {
			t.Errorf("chmod, chown and touch outside the roots: stdout %q, stderr %q; want all three refused with EROFS", got["stdout"], got["stderr"])
		}
		if fi, err := os.Stat(kept); err != nil || fi.Mode() != 0o644 || fi.ModTime().Year() == 2001 {
			t.Errorf("the file outside the roots changed: %v %v", fi, err)
		}
		if sb, _ := got["sandbox"].(map[string]any); sb["readOnlyMounts"] != true {
			t.Errorf("sandbox = %v, want readOnlyMounts true", got["sandbox"])
		}
	}
	if sup := sandboxSupport(t); sup.MountErr == nil && sup.DevptsErr == nil {
		// On a terminal, its own: the only one in its /dev/pts.
		_, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"sh", "-c", "tty; echo /dev/pts/*"}, "tty": map[string]int{"cols": 80, "rows": 24},
			"env": map[string]string{"PATH": os.Getenv("PATH")}, "sandbox": map[string]any{"readOnly": true}})
		if want := "/dev/pts/0\r\n/dev/pts/0 /dev/pts/ptmx\r\n"; got["stdout"] != want {
			t.Errorf("tty and /dev/pts of a sandboxed command on a terminal = %q, want %q", got["stdout"], want)
		}
	}
	if _, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"true"}}); fmt.Sprint(got["sandbox"]) != "map[type:none]" {
		t.Errorf("unsandboxed sandbox = %v, want {type: none}", got["sandbox"])
	}

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
			c.Close()
		}
	}()
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)
	for _, network := range []string{"full", "none"} {
		_, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"/bin/bash", "-c", connect}, "sandbox": map[string]any{"network": network}})
		if want := map[string]string{"full": "connected\n", "none": ""}[network]; got["stdout"] != want {
			t.Errorf("connect to the test's listener with network %s: stdout %q, want %q", network, got["stdout"], want)
		}
	}

	home := t.TempDir()
	profile := fmt.Sprintf("echo profile > %s/profile\nexport FROM_PROFILE=yes\n", outside)
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	code, got, _ = s.post(t, "/processes", map[string]any{
		"argv": []string{"/bin/bash", "-lc", "echo $FROM_PROFILE"}, "cwd": home, "env": map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
		"shellSnapshot": map[string]any{"scopeId": "sandboxed", "shell": map[string]string{"name": "bash", "path": "/bin/bash"}},
		"sandbox":       map[string]any{"writableRoots": []string{home}, "network": "none"},
	})
	if code != http.StatusCreated {
		t.Fatalf("POST /processes = %d %v", code, got)
	}
	if sb, _ := got["sandbox"].(map[string]any); sb["type"] != "landlock" {
		t.Errorf("POST /processes sandbox = %v, want landlock", got["sandbox"])
	}
	if snap, _ := got["snapshot"].(map[string]any); snap["outcome"] != "used" {
		t.Errorf("snapshot = %v, want used", got["snapshot"])
	}
	if _, err := os.Stat(filepath.Join(outside, "profile")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the profile wrote outside the sandbox during its capture (%v)", err)
	}
}

// TestSandboxUnavailableOverHTTP: a server without CAP_SYS_ADMIN cannot make
// network namespaces, so network none is a 422 sandbox_unavailable naming
// them, and neither the command nor its snapshot's profile runs; a sandbox
// it can enforce still runs.
func TestSandboxUnavailableOverHTTP(t *testing.T) {
	skipWithoutSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the server without CAP_SYS_ADMIN")
	}
	s := startServerProcess(t, []string{"setpriv", "--bounding-set=-sys_admin", "--"})
	home := t.TempDir()
	profileRan, commandRan := filepath.Join(home, "profile-ran"), filepath.Join(home, "command-ran")
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("touch "+profileRan+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{
		"argv": []string{"/bin/bash", "-lc", "touch " + commandRan}, "cwd": home, "env": map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
		"shellSnapshot": map[string]any{"scopeId": "refused", "shell": map[string]string{"name": "bash", "path": "/bin/bash"}},
		"sandbox":       map[string]any{"writableRoots": []string{home}, "network": "none"},
	}
	for _, path := range []string{"/exec", "/processes"} {
		code, got, _ := s.post(t, path, body)
		if code != http.StatusUnprocessableEntity || got["code"] != "sandbox_unavailable" || !strings.Contains(fmt.Sprint(got["detail"]), "network namespaces") {
			t.Errorf("POST %s = %d %v, want 422 sandbox_unavailable naming network namespaces", path, code, got)
		}
	}
	for _, f := range []string{profileRan, commandRan} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): something ran for a refused sandbox", filepath.Base(f), err)
		}
	}
	body["sandbox"] = map[string]any{"writableRoots": []string{home}}
	code, got, _ := s.post(t, "/exec", body)
	if code != http.StatusOK || got["exitCode"] != 0.0 {
		t.Errorf("POST /exec with an enforceable sandbox = %d %v, want it run", code, got)
	}
	// Without CAP_SYS_ADMIN no mount namespace either: Landlock alone, and
	// the answer says so.
	if sb, _ := got["sandbox"].(map[string]any); sb["type"] != "landlock" || sb["readOnlyMounts"] != false {
		t.Errorf("sandbox = %v, want landlock with readOnlyMounts false", got["sandbox"])
	}
	if _, err := os.Stat(commandRan); err != nil {
		t.Errorf("the enforceable command did not run: %v", err)
	}
}

// TestDefaultSandboxFlag: --default-sandbox confines a request that gives
// none; a malformed or unenforceable one stops the server before it listens.
func TestDefaultSandboxFlag(t *testing.T) {
	skipWithoutSandbox(t)
	inside, outside := t.TempDir(), t.TempDir()
	for _, bad := range []string{`{"writableRoots":["relative"]}`, `{"writable":["/tmp"]}`, `{"writableRoots":["/no/such/root"]}`, `{} {}`} {
		err := run(context.Background(), []string{"snapexec", "--addr", "127.0.0.1:0", "--default-sandbox", bad}, nil, strings.NewReader(""), &syncBuffer{}, &syncBuffer{})
		if err == nil || !strings.Contains(err.Error(), "default") {
			t.Errorf("run --default-sandbox %s = %v, want an error naming the default sandbox", bad, err)
		}
	}
	s := startServer(t, nil, "--default-sandbox", fmt.Sprintf(`{"writableRoots":[%q],"network":"none"}`, inside))
	script := fmt.Sprintf("echo > %s/in; echo > %s/out", inside, outside)
	_, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"/bin/sh", "-c", script}})
	if sb, _ := got["sandbox"].(map[string]any); sb["type"] != "landlock" {
		t.Errorf("sandbox under --default-sandbox = %v, want landlock", got["sandbox"])
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a command under the default sandbox wrote outside it (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(inside, "in")); err != nil {
		t.Errorf("a command under the default sandbox could not write inside: %v", err)
	}
}

// TestDefaultSandboxWarning: the server warns at start of a default sandbox
// that leaves the network full without a token, and only then.
func TestDefaultSandboxWarning(t *testing.T) {
	roots := []string{"/work"}
	for _, c := range []struct {
		name   string
		policy sandbox.Policy
		token  bool
		warns  bool
	}{
		{"none at all", sandbox.Policy{}, false, false},
		{"roots, network full by default", sandbox.Policy{WritableRoots: roots}, false, true},
		{"read only, network full", sandbox.Policy{ReadOnly: true, Network: sandbox.NetworkFull}, false, true},
		{"roots and a token", sandbox.Policy{WritableRoots: roots}, true, false},
		{"network none", sandbox.Policy{WritableRoots: roots, Network: sandbox.NetworkNone}, false, false},
		{"network loopback", sandbox.Policy{Network: sandbox.NetworkLoopback}, false, false},
	} {
		if got := defaultSandboxWarning(c.policy, c.token); (got != "") != c.warns {
			t.Errorf("%s: defaultSandboxWarning = %q, want a warning: %t", c.name, got, c.warns)
		}
	}
}

// TestSandboxRootsKeepOffShellState: a sandboxed command must not be able to
// change the shell state that other commands run (a snapshot's restore file,
// in the server's private directories): a writable root that reaches the
// directory of a restore file, or any directory above it, is refused with
// 400 and nothing runs; a root elsewhere runs.
func TestSandboxRootsKeepOffShellState(t *testing.T) {
	skipWithoutSandbox(t)
	s := startServer(t, nil)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("greet() { echo hi; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	snap := map[string]any{"scopeId": "state", "shell": map[string]string{"name": "bash", "path": "/bin/bash"}}
	// The replayed command's own first environment names its restore file.
	code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"/bin/bash", "-lc", `tr '\0' '\n' < /proc/$$/environ | sed -n 's/^BASH_ENV=//p'; greet`}, "cwd": home, "env": env, "shellSnapshot": snap})
	restore := strings.TrimSuffix(strings.TrimSuffix(fmt.Sprint(got["stdout"]), "hi\n"), "\n")
	if code != http.StatusOK || !filepath.IsAbs(restore) {
		t.Fatalf("POST /exec = %d %v, want the restore file's path and hi", code, got)
	}
	ran := filepath.Join(home, "ran")
	var refused []string
	for dir := filepath.Dir(restore); dir != "/"; dir = filepath.Dir(dir) {
		refused = append(refused, dir)
	}
	for _, root := range refused {
		body := map[string]any{"argv": []string{"touch", ran}, "env": env, "sandbox": map[string]any{"writableRoots": []string{home, root}}}
		code, got, _ := s.post(t, "/exec", body)
		if code != http.StatusBadRequest || got["field"] != "sandbox.writableRoots[1]" {
			t.Errorf("POST /exec with the writable root %s = %d %v, want 400 for sandbox.writableRoots[1]", root, code, got)
		}
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): a refused sandbox ran its command", ran, err)
	}
	body := map[string]any{"argv": []string{"touch", ran}, "env": env, "sandbox": map[string]any{"writableRoots": []string{home}}}
	if code, got, _ := s.post(t, "/exec", body); code != http.StatusOK || got["exitCode"] != 0.0 {
		t.Errorf("POST /exec with the writable root %s = %d %v, want it run", home, code, got)
	}
}

// TestSandboxRootSwappedByItsProfile: a writable root that is a symbolic
// link, admitted while it led into the request's own directory, and pointed
// at the server's private directory by the profile the request's capture
// runs, reaches nothing there: the spawns after the swap (the command's
// own) check again where the root lies, and refuse it.
func TestSandboxRootSwappedByItsProfile(t *testing.T) {
	skipWithoutSandbox(t)
	s := startServer(t, nil)
	home := t.TempDir()
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	snap := map[string]any{"scopeId": "first", "shell": map[string]string{"name": "bash", "path": "/bin/bash"}}
	code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"/bin/bash", "-lc", `tr '\0' '\n' < /proc/$$/environ | sed -n 's/^BASH_ENV=//p'`}, "cwd": home, "env": env, "shellSnapshot": snap})
	restore := strings.TrimSpace(fmt.Sprint(got["stdout"]))
	if code != http.StatusOK || !filepath.IsAbs(restore) {
		t.Fatalf("POST /exec = %d %v, want the restore file's path", code, got)
	}
	private := filepath.Dir(filepath.Dir(restore))
	w := t.TempDir()
	if err := os.Mkdir(filepath.Join(w, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w, "real"), filepath.Join(w, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("ln -sfn "+private+" "+filepath.Join(w, "link")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(private, "planted")
	code, got, _ = s.post(t, "/exec", map[string]any{"argv": []string{"/bin/bash", "-lc", "echo x > " + planted}, "cwd": home, "env": env,
		"shellSnapshot": map[string]any{"scopeId": "swap", "shell": map[string]string{"name": "bash", "path": "/bin/bash"}},
		"sandbox":       map[string]any{"writableRoots": []string{w, filepath.Join(w, "link")}, "network": "none"}})
	if _, err := os.Stat(planted); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): a root swapped by the capture's profile reached the private directory", planted, err)
	}
	if code != http.StatusBadRequest || got["field"] != "sandbox.writableRoots[1]" {
		t.Errorf("POST /exec after the swap = %d %v, want 400 for sandbox.writableRoots[1]", code, got)
	}
}

// TestSandboxedCommandsCannotUseTheSocket: a command the server runs with a
// network of its own (none, loopback) reaches the server through its Unix
// socket no more than through its TCP address, so that it cannot ask a
// server without a token for a command with no sandbox: its connection gets
// a 403 sandboxed_client and nothing runs. An unsandboxed command, and one
// with the host's network (which reaches the TCP address anyway), may.
func TestSandboxedCommandsCannotUseTheSocket(t *testing.T) {
	skipWithoutSandbox(t)
	sock := filepath.Join(t.TempDir(), "s.sock")
	s := startServer(t, nil, "--addr", "unix:"+sock)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		sandbox map[string]any
		allowed bool
	}{
		{"none", map[string]any{"network": "none"}, false},
		{"loopback", map[string]any{"network": "loopback"}, false},
		{"read-only, none", map[string]any{"readOnly": true, "network": "none"}, false},
		{"full", map[string]any{"network": "full", "readOnly": true}, true},
		{"unsandboxed", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "escaped")
			body := map[string]any{"argv": []string{self}, "env": map[string]string{dialEnv: sock, dialFileEnv: file}}
			if c.sandbox != nil {
				body["sandbox"] = c.sandbox
			}
			code, got, _ := s.post(t, "/exec", body)
			out := strings.TrimSpace(fmt.Sprint(got["stdout"]))
			_, statErr := os.Stat(file)
			switch {
			case code != http.StatusOK:
				t.Fatalf("POST /exec = %d %v", code, got)
			case c.allowed && (out != "HTTP/1.1 200 OK" || statErr != nil):
				t.Errorf("the command's request over the socket = %q, file %v; want 200 and the file written", out, statErr)
			case !c.allowed && (out != "HTTP/1.1 403 Forbidden" || statErr == nil):
				t.Errorf("the sandboxed command's request over the socket = %q, file %v; want 403 and nothing run", out, statErr)
			}
		})
	}
}
