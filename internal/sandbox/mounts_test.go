package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Landlock does not rule metadata; the read-only mounts do, outside the
// roots, for root too, and leave it alone inside them.
func TestMetadataStaysInsideRoots(t *testing.T) {
	s := newSandbox(t, Options{})
	if err := s.Support().MountErr; err != nil {
		t.Skipf("this machine cannot make mount namespaces: %v", err)
	}
	root, outside := t.TempDir(), t.TempDir()
	for _, p := range []Policy{{WritableRoots: []string{root}}, {ReadOnly: true}} {
		requireSupport(t, s, p)
		for _, mode := range []string{"chmod", "chown", "utime", "setxattr"} {
			out := filepath.Join(outside, mode)
			in := filepath.Join(root, mode)
			for _, f := range []string{out, in} {
				if err := os.WriteFile(f, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := stat(t, out)
			if got := run(t, s, p, helperCmd(t, mode, out)); got != "EROFS" {
				t.Errorf("%s of a file outside under %+v = %q, want EROFS", mode, p, got)
			}
			if after := stat(t, out); after != before {
				t.Errorf("%s outside under %+v changed the file: %+v, was %+v", mode, p, after, before)
			}
			want := "ok"
			if p.ReadOnly {
				want = "EROFS"
			}
			// tmpfs takes user.* extended attributes since Linux 6.6.
			if got := run(t, s, p, helperCmd(t, mode, in)); got != want && !(mode == "setxattr" && got == "EOPNOTSUPP") {
				t.Errorf("%s of a file inside under %+v = %q, want %q", mode, p, got, want)
			}
		}
	}
}

// fileMeta is what the metadata calls change.
type fileMeta struct {
	mode     uint32
	uid, gid uint32
	mtime    unix.Timespec
}

func stat(t *testing.T, path string) fileMeta {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileMeta{st.Mode, st.Uid, st.Gid, st.Mtim}
}

// A filesystem mounted inside a root keeps its flags: read-only stays
// read-only, writable stays writable; a root inside another is writable too,
// and nothing the sandbox mounts shows on the host.
func TestRootsKeepTheirMounts(t *testing.T) {
	s := newSandbox(t, Options{})
	if err := s.Support().MountErr; err != nil {
		t.Skipf("this machine cannot make mount namespaces: %v", err)
	}
	root := t.TempDir()
	ro, rw, nested := filepath.Join(root, "ro"), filepath.Join(root, "rw"), filepath.Join(root, "nested")
	for _, d := range []string{ro, rw, nested} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mount(t, rw, 0)
	mount(t, ro, unix.MS_RDONLY)
	p := Policy{WritableRoots: []string{nested, root}}
	requireSupport(t, s, p)
	host := mountinfo(t)
	for path, want := range map[string]string{
		filepath.Join(root, "f"):   "ok",
		filepath.Join(rw, "f"):     "ok",
		filepath.Join(ro, "f"):     "EROFS",
		filepath.Join(nested, "f"): "ok",
	} {
		if got := run(t, s, p, helperCmd(t, "write", path)); got != want {
			t.Errorf("write %s under %+v = %q, want %q", path, p, got, want)
		}
	}
	if after := mountinfo(t); after != host {
		t.Errorf("the host's mounts changed under a sandboxed command:\n%s\nwas\n%s", after, host)
	}
}

// mount mounts a tmpfs on dir with flags until the test ends, or skips the
// test when the server may not.
func mount(t *testing.T, dir string, flags uintptr) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size=1m"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("mount: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Error(err)
		}
	})
}

func mountinfo(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReportSaysReadOnlyMounts(t *testing.T) {
	bothWays(t, func(t *testing.T, s *Sandbox) {
		mounts := s.Support().MountErr == nil
		for _, tt := range []struct {
			p      Policy
			mounts bool
			write  string // of a file outside the roots
		}{
			{Policy{ReadOnly: true}, mounts, refused(s)},
			{Policy{WritableRoots: []string{t.TempDir()}}, mounts, refused(s)},
			{Policy{Network: NetworkNone}, false, "ok"},
			// Nothing lies outside the roots: no mount to make read-only.
			{Policy{WritableRoots: []string{"/"}}, false, "ok"},
		} {
			requireSupport(t, s, tt.p)
			f := filepath.Join(t.TempDir(), "f")
			var out strings.Builder
			cmd := helperCmd(t, "write", f)
			cmd.Stdout = &out
			r, err := s.Start(tt.p, cmd, nil)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if got := strings.TrimSpace(out.String()); got != tt.write {
				t.Errorf("write %s under %+v = %q, want %q", f, tt.p, got, tt.write)
			}
			if r.ReadOnlyMounts != tt.mounts {
				t.Errorf("Start(%+v) reported ReadOnlyMounts %t, want %t", tt.p, r.ReadOnlyMounts, tt.mounts)
			}
		}
	})
}
