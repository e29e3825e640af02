package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestFloodOfIdleAndSlowConnections runs the server binary, so that its memory
// is its own, with a token, and opens 2,000 idle connections (1,000 that
// never send a byte, 1,000 kept alive after a GET /healthz) and 50 slow
// bodies (8 MiB bodies less their last byte to a public path and to /exec
// without the token, and bodies trickled a byte at a time with the token).
// Meanwhile an authorised /exec answers normally, the server's peak RSS stays
// under 64 MiB, and the trickled bodies are cut at --body-timeout.
func TestFloodOfIdleAndSlowConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and opens 2,050 connections")
	}
	raiseOpenFiles(t, 8192)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := startBinary(t, ctx, "--token-file", writeToken(t), "--body-timeout", "2s", "--log-level", "warn")
	idleMem := procMemory(t, srv.pid)

	var mu sync.Mutex
	var conns []net.Conn
	dial := func() net.Conn {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatalf("dial %s: %v", srv.addr, err)
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		return c
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	for range 1000 {
		dial()
	}
	kept := 0
	for range 1000 {
		c := dial()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode == 200 {
			kept++
		}
	}
	var writers sync.WaitGroup
	held := func(path, auth string) {
		c := dial()
		writers.Add(1)
		go func() {
			defer writers.Done()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, auth, 8<<20)
			_, _ = c.Write(make([]byte, 8<<20-1)) // ends when the server closes
		}()
	}
	for range 20 {
		held("/healthz", "")
	}
	for range 15 {
		held("/exec", "")
	}
	var trickled []net.Conn
	for range 15 {
		c := dial()
		trickled = append(trickled, c)
		fmt.Fprintf(c, "POST /exec HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", testToken)
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < 50 && ctx.Err() == nil; i++ {
				time.Sleep(200 * time.Millisecond)
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
	}

	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+srv.addr+"/exec", strings.NewReader(`{"argv":["echo","through"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("authorised /exec during the flood: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"stdout":"through\n"`) {
		t.Errorf("authorised /exec during the flood = %d %s, want 200 with its output", resp.StatusCode, body)
	}
	floodMem, fds := procMemory(t, srv.pid), openFiles(t, srv.pid)

	cut := 0
	answerBy := time.Now().Add(20 * time.Second)
	for _, c := range trickled {
		_ = c.SetReadDeadline(answerBy)
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode == http.StatusRequestTimeout {
			cut++
		}
	}
	if cut != len(trickled) {
		t.Errorf("%d of %d trickled bodies were answered 408 at --body-timeout", cut, len(trickled))
	}
	writers.Wait()
	peak := procMemory(t, srv.pid)
	t.Logf("server: VmRSS %.1f MiB idle; %.1f MiB with the flood open (%d fds, %d of 1,000 keep-alive answered); peak VmHWM %.1f MiB; authorised /exec took %v",
		mib(idleMem.rss), mib(floodMem.rss), fds, kept, mib(peak.hwm), took.Round(time.Millisecond))
	if peak.hwm >= 64<<20 {
		t.Errorf("peak RSS under the flood = %.1f MiB, want under 64 MiB", mib(peak.hwm))
	}
	if fds > 600 {
		t.Errorf("the server held %d fds under the flood, want at most about --max-connections (512)", fds)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// server is the server binary running as a subprocess.
type server struct {
	addr string
	pid  int
}

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "snapexec-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "snapexec")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// startBinary builds the server (once per test binary) and runs it on
// 127.0.0.1:0 with args until the test ends.
func startBinary(t *testing.T, ctx context.Context, args ...string) server {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(bin)) })
	cmd := exec.CommandContext(ctx, bin, append([]string{"--addr", "127.0.0.1:0", "--grace", "300ms"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("the server did not stop on SIGTERM; logs:\n%s", logs)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := regexp.MustCompile(`listening on http://(\S+)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("no listening line (%q, %v); logs:\n%s", line, err, logs)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return server{addr: m[1], pid: cmd.Process.Pid}
}

func writeToken(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, file, testToken+"\n")
	return file
}

// memory is a process's resident memory now and at its peak, in bytes.
type memory struct{ rss, hwm int64 }

func procMemory(t *testing.T, pid int) memory {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.rss = kb << 10
		case "VmHWM:":
			m.hwm = kb << 10
		}
	}
	return m
}

func openFiles(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// raiseOpenFiles makes sure this process may open want files, or skips.
func raiseOpenFiles(t *testing.T, want uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if lim.Cur >= want {
		return
	}
	lim.Cur, lim.Max = want, max(lim.Max, want)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("the test needs %d open files and cannot raise RLIMIT_NOFILE: %v", want, err)
	}
}
