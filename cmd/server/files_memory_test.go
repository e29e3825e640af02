package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/testserver"
)

// rssKiB is the resident set of process pid, from /proc; 0 when it cannot
// be read.
func rssKiB(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// patterned yields n bytes of a pattern that no run of zeros can fake, in
// pieces, as a client streaming a file would.
type patterned struct{ n, off int64 }

func (p *patterned) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// TestFilesLargeUploadMemory: a 200 MB upload streamed to the real server
// binary (a process of its own, so that its resident set is its own) grows
// the server's RSS by a small bound, whatever the file's size, and the file
// arrives whole; reading it back streams it too. The body crosses the
// server's JSON limit and outlasts nothing: the upload's deadline moves with
// its reads.
func TestFilesLargeUploadMemory(t *testing.T) {
	const size = 200 << 20
	root := t.TempDir()
	s := testserver.Start(t, testserver.Options{Args: []string{"--files-root", root, "--max-body-bytes", "65536"}})
	pid := s.Pid()
	before := rssKiB(pid)
	if before == 0 {
		t.Fatalf("cannot read the server's RSS")
	}

	req, _ := http.NewRequest("PUT", s.URL+"/files/content?"+path(filepath.Join(root, "big")), &patterned{n: size})
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.ContentLength = size
	// The RSS is sampled while the upload runs, and its peak kept.
	stop, peaked := make(chan struct{}), make(chan int)
	go func() {
		peak := 0
		for {
			peak = max(peak, rssKiB(pid))
			select {
			case <-stop:
				peaked <- peak
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	resp, err := http.DefaultClient.Do(req)
	close(stop)
	peak := max(<-peaked, rssKiB(pid))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT 200 MB = %d %s", resp.StatusCode, body)
	}
	t.Logf("server RSS: %d KiB before, %d KiB at the peak of a 200 MiB upload (+%d KiB)", before, peak, peak-before)
	if grew := peak - before; grew > 32<<10 {
		t.Errorf("the server's RSS grew by %d KiB during a 200 MiB upload, want at most 32 MiB: the body is held in memory", grew)
	}
	f, err := os.Open(filepath.Join(root, "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := io.Copy(io.Discard, f); n != size || err != nil {
		t.Fatalf("the file holds %d bytes (%v), want %d", n, err, size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if !sameStream(f, &patterned{n: size}) {
		t.Errorf("the file's bytes differ from the upload's")
	}

	req, _ = http.NewRequest("GET", s.URL+"/files/content?"+path(filepath.Join(root, "big")), nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !sameStream(resp.Body, &patterned{n: size}) {
		t.Errorf("GET of the 200 MiB file differs from what was uploaded")
	}
	if after := rssKiB(pid); after-before > 32<<10 {
		t.Errorf("the server's RSS grew by %d KiB after reading 200 MiB back", after-before)
	}
}

// sameStream reports whether a and b yield the same bytes.
func sameStream(a, b io.Reader) bool {
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, errA := io.ReadFull(a, bufA)
		nb, errB := io.ReadFull(b, bufB)
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false
		}
		if errA != nil || errB != nil {
			return (errA == io.EOF || errA == io.ErrUnexpectedEOF) && (errB == io.EOF || errB == io.ErrUnexpectedEOF)
		}
	}
}

// TestFilesSlowUpload: an upload that pauses for less than --body-timeout
// between its pieces succeeds, however long it takes in all; a JSON body
// keeps its single deadline.
func TestFilesSlowUpload(t *testing.T) {
	root := t.TempDir()
	s := startServer(t, nil, "--files-root", root, "--body-timeout", "2s")
	pr, pw := io.Pipe()
	go func() {
		for i := range 6 {
			time.Sleep(600 * time.Millisecond) // 3.6 s in all, each pause well within 2 s
			fmt.Fprintf(pw, "piece %d\n", i)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("PUT", s.url+"/files/content?"+path(filepath.Join(root, "slow")), pr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a slow upload = %d %s, want 200", resp.StatusCode, b)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "slow")); strings.Count(string(got), "piece") != 6 {
		t.Errorf("the slow upload wrote %q", got)
	}
}
