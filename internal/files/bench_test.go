package files

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The file the throughput benchmarks move, and what they compare with: cat
// and cp of the same file, as whole processes. Write syncs the file before
// it renames it, which cp does not: "cp+sync" adds coreutils' sync of the
// copy, for a like-for-like figure.
const benchBytes = 64 << 20

func benchFixture(b *testing.B) (fixture, string) {
	b.Helper()
	base := b.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(root, "src")
	out, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, io.LimitReader(pattern{}, benchBytes)); err != nil {
		b.Fatal(err)
	}
	out.Close()
	fs, err := New([]string{root}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fs.Close() })
	return fixture{fs: fs, root: root}, src
}

func BenchmarkRead(b *testing.B) {
	fx, src := benchFixture(b)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	b.Run("files", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			file, _, err := fx.fs.Open(src)
			if err != nil {
				b.Fatal(err)
			}
			// A plain io.Writer, as an HTTP response is: no kernel copy.
			if n, err := io.Copy(struct{ io.Writer }{devNull}, file); err != nil || n != benchBytes {
				b.Fatal(n, err)
			}
			file.Close()
		}
	})
	b.Run("cat", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			cmd := exec.Command("cat", src)
			cmd.Stdout = devNull
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkWrite(b *testing.B) {
	fx, src := benchFixture(b)
	dst := fx.in("dst")
	b.Run("files", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			in, err := os.Open(src)
			if err != nil {
				b.Fatal(err)
			}
			// A plain io.Reader, as an upload's body is: no kernel copy.
			if _, err := fx.fs.Write(dst, struct{ io.Reader }{in}, WriteOptions{}); err != nil {
				b.Fatal(err)
			}
			in.Close()
		}
	})
	b.Run("cp", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			if err := exec.Command("cp", src, dst).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cp+sync", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			if err := exec.Command("sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", src, dst).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
