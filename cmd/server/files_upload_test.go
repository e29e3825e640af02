package main

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// largeUpload is an upload big enough to be read past net/http
// (handlers.uploadBody: 1 MiB and more), with an odd length.
const largeUpload = 3<<20 + 123

// TestFilesLargeUploadsSpliced: a large upload, whose body the server reads
// straight from the socket after what net/http read ahead, arrives whole and
// in order, with or without Expect: 100-continue, and over the Unix socket.
// A body that loses or reorders net/http's read-ahead fails here.
func TestFilesLargeUploadsSpliced(t *testing.T) {
	root := t.TempDir()
	sock := filepath.Join(t.TempDir(), "s.sock")
	s := startServer(t, nil, "--files-root", root, "--addr", "unix:"+sock)
	data := make([]byte, largeUpload)
	_, _ = crand.Read(data)
	unixClient := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	cases := []struct {
		name   string
		client *http.Client
		base   string
		expect bool
	}{
		{"tcp", http.DefaultClient, s.url, false},
		{"expect 100-continue", &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second}}, s.url, true},
		{"unix socket", unixClient, "http://localhost", false},
	}
	for _, c := range cases {
		dst := filepath.Join(root, strings.ReplaceAll(c.name, " ", "-"))
		for round := range 2 { // the second replaces the first
			req, _ := http.NewRequest("PUT", c.base+"/files/content?"+path(dst), bytes.NewReader(data))
			if c.expect {
				req.Header.Set("Expect", "100-continue")
			}
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || jsonOf(t, b)["size"] != float64(largeUpload) {
				t.Errorf("%s, round %d: PUT of %d bytes = %d %s", c.name, round, largeUpload, resp.StatusCode, b)
			}
			if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
				t.Errorf("%s, round %d: the file is %d bytes, not what was uploaded", c.name, round, len(got))
			}
		}
	}
	leftovers(t, root)
}

// TestFilesLargeUploadCutOrStalled: a large upload whose client goes away
// half way, or stops sending for longer than --body-timeout, leaves the old
// file as it was and no temporary file; the stalled one is told 408.
func TestFilesLargeUploadCutOrStalled(t *testing.T) {
	root := t.TempDir()
	s := startServer(t, nil, "--files-root", root, "--body-timeout", "500ms")
	dst := filepath.Join(root, "f")
	if err := os.WriteFile(dst, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.url)
	send := func(t *testing.T) (net.Conn, *bufio.Reader) {
		t.Helper()
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "PUT /files/content?%s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", path(dst), u.Host, largeUpload)
		if _, err := conn.Write(bytes.Repeat([]byte("n"), largeUpload/2)); err != nil {
			t.Fatal(err)
		}
		return conn, bufio.NewReader(conn)
	}

	conn, _ := send(t)
	conn.Close()        // gone half way
	conn, br := send(t) // stalls half way
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the stalled upload got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || jsonOf(t, b)["code"] != "body_timeout" {
		t.Errorf("an upload stalled beyond --body-timeout = %d %s, want 408 body_timeout", resp.StatusCode, b)
	}
	waitFor(t, "the old file alone in its directory", func() bool {
		got, _ := os.ReadFile(dst)
		return string(got) == "old" && len(dirNames(t, root)) == 1
	})
}

// leftovers fails t if dir holds a temporary file of a write.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	for _, name := range dirNames(t, dir) {
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("a temporary file was left: %s", name)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(list))
	for i, e := range list {
		names[i] = e.Name()
	}
	return names
}
