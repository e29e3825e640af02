package files

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fixture is an FS with one root and a directory outside it, both fresh.
type fixture struct {
	fs            *FS
	root, outside string
}

func newFixture(t *testing.T, opts Options) fixture {
	t.Helper()
	base := t.TempDir()
	fx := fixture{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, dir := range []string{fx.root, fx.outside} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if fx.fs, err = New([]string{fx.root}, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.fs.Close() })
	return fx
}

// in returns the absolute path of rel beneath the root.
func (fx fixture) in(rel string) string { return filepath.Join(fx.root, rel) }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantErr fails unless err matches want (nil means no error).
func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Errorf("%s = %v, want %v", call, err, want)
	}
}

// names lists a directory's entries, to show what a write left behind.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
