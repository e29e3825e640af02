package shellsnap

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStaleDetectsEveryChange(t *testing.T) {
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	writeFile(t, rc, "a\n")
	files := startupFiles("bash", map[string]string{"HOME": home})
	tests := []struct {
		name   string
		change func()
	}{
		{"edit, same size", func() { writeFile(t, rc, "b\n") }},
		{"grow", func() { writeFile(t, rc, "bb\n") }},
		{"new file", func() { writeFile(t, filepath.Join(home, ".bash_profile"), "x\n") }},
		{"removed file", func() { _ = os.Remove(filepath.Join(home, ".bash_profile")) }},
		{"replaced file", func() {
			tmp := filepath.Join(home, "new")
			writeFile(t, tmp, "bb\n")
			_ = os.Rename(tmp, rc)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stamps := stampFiles(files)
			if stale(stamps) {
				t.Fatalf("stale() = true before any change")
			}
			time.Sleep(2 * time.Millisecond) // a distinct mtime even on coarse clocks
			tt.change()
			if !stale(stamps) {
				t.Errorf("stale() = false after %s", tt.name)
			}
		})
	}
}

// BenchmarkStaleCheck is the cost a cache hit pays to notice an edited
// profile: one stat per startup file of the shell.
func BenchmarkStaleCheck(b *testing.B) {
	home := b.TempDir()
	for _, f := range []string{".bash_profile", ".bashrc"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	stamps := stampFiles(startupFiles("bash", map[string]string{"HOME": home}))
	b.ReportMetric(float64(len(stamps)), "files")
	for b.Loop() {
		if stale(stamps) {
			b.Fatal("stale")
		}
	}
}
