package files

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// failAfter is a writer that fails once it has taken n bytes.
type failAfter struct {
	n   int
	got int
}

func (w *failAfter) Write(p []byte) (int, error) {
	if w.got+len(p) > w.n {
		k := w.n - w.got
		w.got = w.n
		return k, errors.New("disk full")
	}
	w.got += len(p)
	return len(p), nil
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

// TestCopyOverlapped: every size across the buffer boundaries arrives whole
// and in order, whatever the reads' sizes; a read error is returned after
// what was read is written; a write error stops the reading within the two
// buffers.
func TestCopyOverlapped(t *testing.T) {
	for _, size := range []int{0, 1, copyBufferBytes - 1, copyBufferBytes, copyBufferBytes + 1, 3*copyBufferBytes + 7} {
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i % 253)
		}
		for name, r := range map[string]io.Reader{"whole": bytes.NewReader(src), "one byte at a time": iotest.OneByteReader(bytes.NewReader(src)), "half reads": iotest.HalfReader(bytes.NewReader(src))} {
			if size > copyBufferBytes && name == "one byte at a time" {
				continue // slow, and the smaller sizes show it
			}
			var dst bytes.Buffer
			n, err := copyOverlapped(&dst, r)
			if err != nil || n != int64(size) || !bytes.Equal(dst.Bytes(), src) {
				t.Errorf("copyOverlapped(%d bytes, %s) = %d, %v; equal %v", size, name, n, err, bytes.Equal(dst.Bytes(), src))
			}
		}
	}

	cut := errors.New("connection reset")
	var dst bytes.Buffer
	n, err := copyOverlapped(&dst, io.MultiReader(bytes.NewReader(make([]byte, 1000)), iotest.ErrReader(cut)))
	if !errors.Is(err, cut) || n != 1000 || dst.Len() != 1000 {
		t.Errorf("copyOverlapped(a read error after 1000 bytes) = %d, %v; want 1000 written and the read error", n, err)
	}

	// A source that ends before its own declared end (an upload whose
	// client went away) says so with io.ErrUnexpectedEOF: not an end.
	for _, size := range []int{5, copyBufferBytes + 5} {
		dst.Reset()
		n, err = copyOverlapped(&dst, io.MultiReader(bytes.NewReader(make([]byte, size)), iotest.ErrReader(io.ErrUnexpectedEOF)))
		if !errors.Is(err, io.ErrUnexpectedEOF) || n != int64(size) {
			t.Errorf("copyOverlapped(%d bytes, then io.ErrUnexpectedEOF) = %d, %v; want %d written and the error", size, n, err, size)
		}
	}

	src := &countingReader{r: bytes.NewReader(make([]byte, 20*copyBufferBytes))}
	n, err = copyOverlapped(&failAfter{n: 100}, src)
	if err == nil || n != 100 {
		t.Errorf("copyOverlapped(a failing writer) = %d, %v; want 100 and the write error", n, err)
	}
	if src.n > 3*copyBufferBytes {
		t.Errorf("after the write failed, %d bytes were read; want at most three buffers", src.n)
	}
}
