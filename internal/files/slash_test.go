package files

import (
	"slices"
	"strings"
	"testing"
)

// TestTrailingSlashNamesADirectory: a path that ends in "/" names a directory,
// as the kernel resolves one (path_resolution(7)): an operation that meets a
// file there, or would make one, is ErrNotADirectory and changes nothing,
// rather than act on the file the cleaned path names (a remove of "f/" meant
// for a directory took the file f). A directory so named is served as
// without the slash.
func TestTrailingSlashNamesADirectory(t *testing.T) {
	fx := newFixture(t, Options{})
	writeFile(t, fx.in("f"), "keep")
	writeFile(t, fx.in("d/e"), "e")
	ops := []struct {
		name string
		call func() error
	}{
		{"Open", func() error {
			file, _, err := fx.fs.Open(fx.in("f") + "/")
			if err == nil {
				file.Close()
			}
			return err
		}},
		{"Stat", func() error { _, err := fx.fs.Stat(fx.in("f") + "/"); return err }},
		{"Write onto", func() error {
			_, err := fx.fs.Write(fx.in("f")+"/", strings.NewReader("new"), WriteOptions{})
			return err
		}},
		{"Write new", func() error {
			_, err := fx.fs.Write(fx.in("new")+"/", strings.NewReader("new"), WriteOptions{})
			return err
		}},
		{"Copy from", func() error { _, err := fx.fs.Copy(fx.in("f")+"/", fx.in("g"), WriteOptions{}); return err }},
		{"Copy to", func() error { _, err := fx.fs.Copy(fx.in("d/e"), fx.in("g")+"/", WriteOptions{}); return err }},
		{"Remove", func() error { return fx.fs.Remove(fx.in("f")+"/", false) }},
		{"Remove recursive", func() error { return fx.fs.Remove(fx.in("f")+"/", true) }},
		{"Move from", func() error { return fx.fs.Move(fx.in("f")+"/", fx.in("g"), false) }},
		{"Move to", func() error { return fx.fs.Move(fx.in("f"), fx.in("g")+"/", false) }},
		{"Move onto", func() error { return fx.fs.Move(fx.in("d/e"), fx.in("f")+"/", true) }},
		{"Mkdir", func() error { return fx.fs.Mkdir(fx.in("f") + "/") }},
		{"List", func() error { _, err := fx.fs.List(fx.in("f")+"/", "", 0); return err }},
	}
	for _, op := range ops {
		wantErr(t, op.name+`("f/")`, op.call(), ErrNotADirectory)
		if got := readFile(t, fx.in("f")); got != "keep" {
			t.Errorf(`after %s("f/") f holds %q, want "keep"`, op.name, got)
		}
		if got := names(t, fx.root); !slices.Equal(got, []string{"d", "f"}) {
			t.Errorf(`after %s("f/") the root holds %v, want [d f]`, op.name, got)
		}
	}
	// A directory named with its slash is the directory.
	if in, err := fx.fs.Stat(fx.in("d") + "/"); err != nil || in.Type != TypeDirectory {
		t.Errorf(`Stat("d/") = %+v, %v, want the directory`, in, err)
	}
	wantErr(t, `Mkdir("n/")`, fx.fs.Mkdir(fx.in("n")+"/"), nil)
	wantErr(t, `Move("n/", "m/")`, fx.fs.Move(fx.in("n")+"/", fx.in("m")+"/", false), nil)
	wantErr(t, `Remove("m/")`, fx.fs.Remove(fx.in("m")+"/", false), nil)
	wantErr(t, `Remove("d/", recursive)`, fx.fs.Remove(fx.in("d")+"/", true), nil)
	if got := names(t, fx.root); !slices.Equal(got, []string{"f"}) {
		t.Errorf("the root holds %v, want [f]", got)
	}
}
