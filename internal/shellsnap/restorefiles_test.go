package shellsnap

import (
	"os"
	"testing"
)

// TestRestoreFilesRefuseWritesAfterClose: once a Cache's files are closed,
// a write (a session's state, a standby's restore, a zsh capture's
// directory) fails rather than leave a file of the state, named at random,
// in the server's working directory, which nothing would remove.
func TestRestoreFilesRefuseWritesAfterClose(t *testing.T) {
	for _, made := range []bool{false, true} {
		t.Chdir(t.TempDir())
		f := &restoreFiles{}
		if made {
			if _, err := f.write("before"); err != nil {
				t.Fatal(err)
			}
		}
		f.close()
		writes := map[string]func() (string, error){
			"write":         func() (string, error) { return f.write("VAR=secret") },
			"writeDir":      func() (string, error) { return f.writeDir(map[string]string{".zshenv": "VAR=secret"}) },
			"scratchFile":   func() (string, error) { return f.scratchFile("VAR=secret") },
			"scratchDir":    func() (string, error) { return f.scratchDir(map[string]string{"a": "VAR=secret"}) },
			"zshCaptureDir": f.zshCaptureDir,
		}
		for name, write := range writes {
			if path, err := write(); err == nil {
				t.Errorf("%s after close (directory made before: %v) = %q, nil; want an error", name, made, path)
			}
		}
		if left, _ := os.ReadDir("."); len(left) != 0 {
			t.Errorf("the working directory after writes to closed files holds %v; want nothing", left)
		}
	}
}
