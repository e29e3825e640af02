package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapexec/snapexec/client"
)

// hangingHome is a HOME whose profile hangs in a sleep with a marker
// argument no one else uses, which it returns.
func hangingHome(t *testing.T, n int) (home, marker string) {
	t.Helper()
	home = t.TempDir()
	marker = fmt.Sprintf("61.%d%d", os.Getpid()%100000, n)
	writeTestFile(t, filepath.Join(home, ".bashrc"), "sleep "+marker+"\n")
	return home, marker
}

type postAnswer struct {
	code int
	body map[string]any
	err  error
}

// postAsync posts body to path and sends the answer, for goroutines that
// must not call t.Fatal.
func (s *testServer) postAsync(path string, body any, answers chan<- postAnswer) {
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		answers <- postAnswer{err: err}
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := postAnswer{code: resp.StatusCode}
	if a.err = json.Unmarshal(raw, &a.body); a.err != nil {
		a.err = fmt.Errorf("answered %d %q: %v", resp.StatusCode, raw, a.err)
	}
	answers <- a
}

// neverRan checks an /exec answer for a command that never started.
func neverRan(t *testing.T, what string, code int, got map[string]any, wantStatus, wantReason string) {
	t.Helper()
	receipt, _ := got["snapshot"].(map[string]any)
	reason, _ := receipt["reason"].(string)
	pid, hasPid := got["pid"]
	id, hasID := got["processId"]
	if code != 200 || got["status"] != wantStatus || !hasPid || pid != nil || !hasID || id != nil ||
		receipt["outcome"] != "not_run" || !strings.Contains(reason, wantReason) {
		t.Errorf("%s = %d %v, want 200 status %s, pid and processId null, outcome not_run saying %q", what, code, got, wantStatus, wantReason)
	}
}

// TestShutdownAnswersRequestsWaitingOnACapture is issue 14's case: three
// /exec wait on the capture of a profile that hangs, and SIGTERM comes.
// Before, they got no answer at all and the capture shell outlived the
// server. Each answers status shutdown, the server exits long before the
// capture's 60 s limit, and the capture shell is gone.
func TestShutdownAnswersRequestsWaitingOnACapture(t *testing.T) {
	procsBefore := descendants()
	s := startServer(t, nil, "--capture-timeout", "60s")
	home, marker := hangingHome(t, 1)
	const n = 3
	answers := make(chan postAnswer, n)
	for range n {
		go s.postAsync("/exec", snapshotBody(home, "echo ran", "hang", "bash", "/bin/bash"), answers)
	}
	waitFor(t, "3 commands waiting on the capture", func() bool {
		e := s.scopeEntries(t, "hang")
		return len(e) == 1 && e[0].Waiting == n
	})
	waitFor(t, "the capture shell's sleep", func() bool { return len(withArg(marker)) > 0 })

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	defer signal.Stop(sigs)
	http.DefaultClient.CloseIdleConnections() // see TestReliabilityShutdown
	start := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run() after SIGTERM = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run() did not return within 30 s of SIGTERM: it waited for the capture (limit 60 s)")
	}
	t.Logf("the server stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	s.cancel()
	s.cancel = nil
	for i := range n {
		select {
		case a := <-answers:
			if a.err != nil {
				t.Errorf("waiter %d got no answer: %v", i, a.err)
				continue
			}
			neverRan(t, fmt.Sprintf("waiter %d at shutdown", i), a.code, a.body, "shutdown", "shutting down")
		case <-time.After(10 * time.Second):
			t.Fatalf("waiter %d got no answer after the server stopped", i)
		}
	}
	waitGone(t, "the capture shell's sleep", marker)
	waitNoNewDescendants(t, procsBefore)
}

// TestTimeoutBoundsTheCaptureWait: with a profile that hangs and a capture
// limit of 60 s, timeoutMs 1000 answers timed_out while the capture is
// still pending: the wait counted against the request's timeout (before, the
// whole capture limit came first). A background start gets 504.
func TestTimeoutBoundsTheCaptureWait(t *testing.T) {
	s := startServer(t, nil, "--capture-timeout", "60s")
	home, marker := hangingHome(t, 2)
	body := snapshotBody(home, "echo ran", "slow", "bash", "/bin/bash")
	body["timeoutMs"] = 1000
	start := time.Now()
	code, got, _ := s.post(t, "/exec", body)
	t.Logf("/exec with timeoutMs 1000 answered after %v", time.Since(start).Round(time.Millisecond))
	neverRan(t, "/exec with timeoutMs 1000 and a hung capture", code, got, "timed_out", "timeout ran out")
	if e := s.scopeEntry(t, "slow"); e.State != client.SnapshotEntryStatePending {
		t.Errorf("entry after the request = %+v, want pending: the capture goes on for the next command", e)
	}

	code, got, _ = s.post(t, "/processes", body)
	if code != http.StatusGatewayTimeout || got["code"] != "deadline_exceeded" {
		t.Errorf("POST /processes with timeoutMs 1000 and a hung capture = %d %v, want 504 deadline_exceeded", code, got)
	}
	if e := s.scopeEntry(t, "slow"); e.State != client.SnapshotEntryStatePending || e.Attempts != 1 {
		t.Errorf("entry after both = %v, want still pending on its first attempt: one capture for both", e)
	}
	s.stop(t)
	waitGone(t, "the capture shell's sleep", marker)
}

// TestOneWorkspaceCannotStallAnother is issue 14's case end to end: 4
// prewarms of a scope whose profile hangs, then another scope's first
// command. Before, the four took every slot and the command waited the
// whole capture limit, then fell back. It captures at once now, while the
// hung scope's captures are still pending.
func TestOneWorkspaceCannotStallAnother(t *testing.T) {
	s := startServer(t, nil, "--max-captures", "4", "--capture-timeout", "60s")
	home, marker := hangingHome(t, 3)
	for i := range 4 {
		dir := filepath.Join(home, fmt.Sprint("w", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := prewarmBody(home)
		body["cwd"] = dir
		if code, got, _ := s.post(t, "/snapshots/hung/prewarm?wait=false", body); code != http.StatusAccepted {
			t.Fatalf("prewarm %d = %d %v, want 202", i, code, got)
		}
	}
	// A scope's share of 4 slots is 2: two capture shells hang.
	waitFor(t, "the hung scope's captures", func() bool { return len(withArg(marker)) == 2 })

	other := t.TempDir()
	writeTestFile(t, filepath.Join(other, ".bashrc"), "other_fn() { echo other; }\n")
	code, got, _ := s.post(t, "/exec", snapshotBody(other, "other_fn", "other", "bash", "/bin/bash"))
	receipt, _ := got["snapshot"].(map[string]any)
	if code != 200 || got["stdout"] != "other\n" || receipt["outcome"] != "used" || receipt["state"] != "on_demand" {
		t.Errorf("another scope's first command = %d %q %v, want 200 other, used on_demand", code, got["stdout"], receipt)
	}
	t.Logf("another scope's first command waited %vms for its snapshot", receipt["waitMs"])
	hung := s.scopeEntries(t, "hung")
	for _, e := range hung {
		if e.State != client.SnapshotEntryStatePending {
			t.Errorf("hung scope's entry %+v, want pending: its captures were not over", e)
		}
	}
	if len(hung) != 4 {
		t.Errorf("hung scope has %d entries, want 4", len(hung))
	}
	s.stop(t)
	waitGone(t, "the hung scope's capture shells", marker)
}
