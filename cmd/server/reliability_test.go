package main

// The reliability suite: load, faults and shutdown against a real server on
// 127.0.0.1, each checked from /proc for leftover processes and descriptors.
// The server runs in-process (run), so its descriptors are this process's and
// its children are ours; it is a child subreaper, so every orphan it leaves
// re-parents to this process too.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snapexec/snapexec/client"
)

// reliabilityRequests is the number of /exec requests of each load mode: 5,000
// by default, which takes 30 to 90 s under -race on a busy 2-core machine. For
// a quicker run of this package only:
//
//	go test -race -run Reliab ./cmd/server/ -args -reliability.requests=500
var reliabilityRequests = flag.Int("reliability.requests", 5000, "requests per mode of TestReliabilityLoad")

// loadConcurrency is how many load requests are in flight at once.
const loadConcurrency = 32

// fdSlack is how many more descriptors than before a load may leave open:
// none is expected once idle connections are closed, but the runtime may open
// one of its own (a timer or poller descriptor) meanwhile.
const fdSlack = 2

// execReply is the part of an ExecResult the suite checks.
type execReply struct {
	ProcessID string  `json:"processId"`
	Pid       int     `json:"pid"`
	Status    string  `json:"status"`
	ExitCode  *int    `json:"exitCode"`
	Signal    *string `json:"signal"`
	Stdout    *string `json:"stdout"`
	Stderr    *string `json:"stderr"`
	Snapshot  struct {
		Outcome string `json:"outcome"`
		State   string `json:"state"`
		Reason  string `json:"reason"`
		Standby bool   `json:"standby"`
	} `json:"snapshot"`
}

func TestReliabilityLoad(t *testing.T) {
	s := startServer(t, nil)
	tr := &http.Transport{MaxIdleConns: 2 * loadConcurrency, MaxIdleConnsPerHost: loadConcurrency}
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	t.Cleanup(tr.CloseIdleConnections)

	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "export LOAD_PROFILE=1\nload_helper() { :; }\nalias ll='ls -l'\n")
	const scope = "reliability-load"
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	modes := []struct {
		name    string
		body    func(nonce string) map[string]any
		outcome string
	}{
		{"without snapshot", func(nonce string) map[string]any {
			return map[string]any{"argv": []string{"echo", nonce}}
		}, "not_requested"},
		{"with snapshot", func(nonce string) map[string]any {
			return snapshotBody(home, "echo "+nonce, scope, "bash", "/bin/bash")
		}, "used"},
	}
	// Warm the scope once, so that every load request finds it cached.
	if code, got, _ := s.post(t, "/exec", snapshotBody(home, "load_helper && echo warm", scope, "bash", "/bin/bash")); code != 200 || got["stdout"] != "warm\n" {
		t.Fatalf("warming the snapshot = %d %v", code, got)
	}
	if e := s.scopeEntry(t, scope); e.State != client.SnapshotEntryStateReady {
		t.Fatalf("warmed entry = %+v, want ready", e)
	}

	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			fdsBefore, procsBefore := quiesce(t, tr), descendants()
			var (
				failures atomic.Int64
				standbys atomic.Int64
				mu       sync.Mutex
				first    []string
			)
			fail := func(format string, args ...any) {
				if failures.Add(1) <= 10 {
					mu.Lock()
					first = append(first, fmt.Sprintf(format, args...))
					mu.Unlock()
				}
			}
			jobs := make(chan int)
			var wg sync.WaitGroup
			start := time.Now()
			for range loadConcurrency {
				wg.Go(func() {
					for i := range jobs {
						nonce := fmt.Sprintf("nonce-%s-%d", run, i)
						reply, err := postExec(hc, s.url, mode.body(nonce))
						switch {
						case err != nil:
							fail("request %d: %v", i, err)
						case reply.Status != "exited" || reply.ExitCode == nil || *reply.ExitCode != 0:
							fail("request %d: status %s exit %v signal %v", i, reply.Status, deref(reply.ExitCode), deref(reply.Signal))
						case deref(reply.Stdout) != nonce+"\n":
							fail("request %d: stdout %q, want its own nonce %q", i, deref(reply.Stdout), nonce)
						case deref(reply.Stderr) != "":
							fail("request %d: stderr %q", i, deref(reply.Stderr))
						case reply.Snapshot.Outcome != mode.outcome:
							fail("request %d: snapshot %+v, want outcome %s", i, reply.Snapshot, mode.outcome)
						case !groupGone(reply.Pid):
							// The group is empty before the answer is written.
							fail("request %d: process group %d still has members after the answer", i, reply.Pid)
						case reply.Snapshot.Standby:
							standbys.Add(1)
						}
					}
				})
			}
			for i := range *reliabilityRequests {
				jobs <- i
			}
			close(jobs)
			wg.Wait()
			elapsed := time.Since(start)
			t.Logf("%d requests at concurrency %d in %v (%.0f/s)", *reliabilityRequests, loadConcurrency, elapsed.Round(time.Millisecond), float64(*reliabilityRequests)/elapsed.Seconds())
			if n := failures.Load(); n > 0 {
				t.Errorf("%d of %d requests failed; the first:\n%s", n, *reliabilityRequests, strings.Join(first, "\n"))
			}
			t.Logf("%d requests ran in a standby shell", standbys.Load())
			if mode.outcome == "used" {
				if standbys.Load() == 0 {
					t.Errorf("no snapshot request ran in a standby shell, want the standbys exercised under load")
				}
				// The scope's idle standby is the one process meant to
				// outlive the load; forgetting the scope ends it.
				if code := s.delete(t, "/snapshots/"+scope); code != http.StatusNoContent {
					t.Fatalf("DELETE /snapshots/%s = %d, want 204", scope, code)
				}
			}
			checkNoLeftovers(t, tr, fdsBefore, procsBefore)
		})
	}
}

// postExec posts body to /exec and decodes the answer, which must be a 200 JSON.
func postExec(hc *http.Client, base string, body map[string]any) (execReply, error) {
	var reply execReply
	b, err := json.Marshal(body)
	if err != nil {
		return reply, err
	}
	resp, err := hc.Post(base+"/exec", "application/json", bytes.NewReader(b))
	if err != nil {
		return reply, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		return reply, fmt.Errorf("answered %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return reply, fmt.Errorf("answered %q: %v", raw, err)
	}
	return reply, nil
}

func TestReliabilityFaults(t *testing.T) {
	s := startServer(t, nil)
	procsBefore := descendants()
	// Runs after every subtest, the parallel ones included, and before the
	// server stops: the faults left nothing behind and the server still serves.
	t.Cleanup(func() {
		checkServes(t, s)
		// Idle standby shells are meant to outlive their commands;
		// forgetting the scopes ends them.
		for _, scope := range []string{"hang", "background"} {
			s.delete(t, "/snapshots/"+scope)
		}
		waitNoNewDescendants(t, procsBefore)
	})
	marker := func(n int) string { return fmt.Sprintf("60.%d%d", os.Getpid()%100000, n) } // a sleep argument no one else uses

	// The capture limit is --capture-timeout's default (10 s), the one this
	// subtest checks, so it takes 10 s and runs in parallel with the others.
	t.Run("profile that hangs", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		sleep := marker(1)
		writeTestFile(t, filepath.Join(home, ".bashrc"), "sleep "+sleep+"\n")
		start := time.Now()
		code, got, _ := s.post(t, "/exec", snapshotBody(home, "echo ran", "hang", "bash", "/bin/bash"))
		elapsed := time.Since(start)
		t.Logf("the command ran after %v", elapsed.Round(time.Millisecond))
		receipt, _ := got["snapshot"].(map[string]any)
		if code != 200 || got["status"] != "exited" || got["stdout"] != "ran\n" || receipt["outcome"] != "fallback" {
			t.Errorf("/exec with a hanging profile = %d %v %q %v, want 200 exited ran, outcome fallback", code, got["status"], got["stdout"], receipt)
		}
		if reason, _ := receipt["reason"].(string); !strings.Contains(reason, "timed out") {
			t.Errorf("fallback reason = %q, want the capture's timeout", reason)
		}
		if elapsed < 9*time.Second || elapsed > 20*time.Second {
			t.Errorf("the command took %v, want about the 10 s capture limit", elapsed)
		}
		if e := s.scopeEntry(t, "hang"); e.State != client.SnapshotEntryStateFailed || e.LastError == nil || e.LastError.Reason != "timeout" {
			t.Errorf("entry after the hang = %+v, want failed with reason timeout", e)
		}
		waitGone(t, "the hanging profile's sleep", sleep)
		checkServes(t, s)
	})

	t.Run("profile whose background job holds stdout", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		sleep := marker(2)
		writeTestFile(t, filepath.Join(home, ".bashrc"), "sleep "+sleep+" &\nbg_helper() { echo helped; }\n")
		start := time.Now()
		code, got, _ := s.post(t, "/exec", snapshotBody(home, "bg_helper", "background", "bash", "/bin/bash"))
		elapsed := time.Since(start)
		receipt, _ := got["snapshot"].(map[string]any)
		if code != 200 || got["stdout"] != "helped\n" || receipt["outcome"] != "used" {
			t.Errorf("/exec with a profile's background job = %d %q %v, want 200 helped, outcome used", code, got["stdout"], receipt)
		}
		if elapsed > 5*time.Second {
			t.Errorf("the capture waited %v for the background job, want it cut short", elapsed)
		}
		waitGone(t, "the profile's background sleep", sleep)
		checkServes(t, s)
	})

	t.Run("command whose background job holds stdout", func(t *testing.T) {
		t.Parallel()
		sleep := marker(3)
		start := time.Now()
		code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"sh", "-c", "sleep " + sleep + " & echo started"}})
		if code != 200 || got["status"] != "exited" || got["stdout"] != "started\n" {
			t.Errorf("/exec leaving a background job = %d %v %q, want 200 exited started", code, got["status"], got["stdout"])
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("the answer waited %v for the background job, want it ended after the drain", elapsed)
		}
		checkGroupGone(t, got)
		waitGone(t, "the command's background sleep", sleep)
		checkServes(t, s)
	})

	t.Run("child that ignores SIGTERM", func(t *testing.T) {
		t.Parallel()
		sleep := marker(4)
		script := "trap '' TERM; sleep " + sleep + " & echo $!; wait"
		code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"sh", "-c", script}, "timeoutMs": 300})
		if code != 200 || got["status"] != "timed_out" || got["signal"] != "SIGKILL" || got["exitCode"] != nil {
			t.Errorf("/exec ignoring SIGTERM = %d %v %v %v, want 200 timed_out SIGKILL, exitCode null", code, got["status"], got["signal"], got["exitCode"])
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(got["stdout"]))); err != nil || alive(pid) {
			t.Errorf("the sleep %q is alive after the timeout (%v)", got["stdout"], err)
		}
		checkGroupGone(t, got)
		waitGone(t, "the sleep that ignores SIGTERM", sleep)
		checkServes(t, s)
	})

	t.Run("client that disconnects mid-stream", func(t *testing.T) {
		t.Parallel()
		sleep := marker(5)
		events := s.execStreamThenLeave(t, mustJSON(t, map[string]any{"processId": "disconnect-1", "argv": []string{"sh", "-c", "echo $$; sleep " + sleep + "; echo never"}}))
		var chunk struct{ Data string }
		_ = json.Unmarshal([]byte(events[0].data), &chunk)
		pid, err := strconv.Atoi(strings.TrimSpace(chunk.Data))
		if err != nil {
			t.Fatalf("first event %q: %v", events[0].data, err)
		}
		got := s.waitStatus(t, "disconnect-1", "terminated")
		if got["signal"] != "SIGTERM" {
			t.Errorf("after the disconnect the process = %v %v, want terminated by SIGTERM", got["status"], got["signal"])
		}
		if alive(pid) || !groupGone(pid) {
			t.Errorf("process group %d survived its streaming client", pid)
		}
		waitGone(t, "the streamed command's sleep", sleep)
		checkServes(t, s)
	})
}

// TestReliabilityShutdown stops a server with a real SIGTERM while 20 commands
// run, half of them ignoring SIGTERM: every request answers status shutdown
// and nothing is left.
func TestReliabilityShutdown(t *testing.T) {
	procsBefore := descendants()
	s := startServer(t, nil)
	const n = 20
	type answer struct {
		code  int
		reply execReply
		err   error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		script := "exec sleep 30"
		if i%2 == 1 {
			script = "trap '' TERM; sleep 30 & wait; wait"
		}
		body := map[string]any{"processId": fmt.Sprintf("shutdown-%d", i), "argv": []string{"sh", "-c", script}}
		wg.Go(func() {
			reply, err := postExec(http.DefaultClient, s.url, body)
			answers[i] = answer{200, reply, err}
		})
	}
	for i := range n {
		id := fmt.Sprintf("shutdown-%d", i)
		waitFor(t, id+" to run", func() bool {
			code, body := s.get(t, "/processes/"+id)
			return code == 200 && strings.Contains(string(body), `"status":"running"`)
		})
	}
	running := descendants()

	// SIGTERM to this process is what run's signal.NotifyContext turns into a
	// shutdown. The test's own Notify keeps the default action (exit) off even
	// if run were to stop listening early.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// An idle connection the client dialed but never sent a request on is
	// StateNew to the server, and http.Server.Shutdown waits 5 s for those:
	// close them, so that the time measured is the server's own.
	http.DefaultClient.CloseIdleConnections()
	start := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run() after SIGTERM = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("run() did not return after SIGTERM")
	}
	// Grace 300 ms: SIGTERM, SIGKILL 300 ms later, then the answers drain.
	stopped := time.Since(start)
	t.Logf("the server stopped %v after SIGTERM", stopped.Round(time.Millisecond))
	if stopped > 4*time.Second {
		t.Errorf("the server took %v to stop after SIGTERM, want about the 300 ms grace", stopped)
	}
	s.cancel()
	s.cancel = nil // stopped: the cleanup's stop has nothing to do
	wg.Wait()

	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("command %d: %v", i, a.err)
		case a.reply.Status != "shutdown":
			t.Errorf("command %d answered status %s (signal %v), want shutdown", i, a.reply.Status, deref(a.reply.Signal))
		case i%2 == 1 && deref(a.reply.Signal) != "SIGKILL":
			t.Errorf("command %d ignored SIGTERM and ended by %v, want SIGKILL", i, deref(a.reply.Signal))
		case !groupGone(a.reply.Pid):
			t.Errorf("command %d: process group %d survived the shutdown", i, a.reply.Pid)
		}
	}
	if len(running) < n {
		t.Errorf("%d descendants while the commands ran, want at least %d", len(running), n)
	}
	waitNoNewDescendants(t, procsBefore)
	if resp, err := http.Get(s.url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("the stopped server still answers /healthz: %d", resp.StatusCode)
	}
}

// checkServes checks that the server still runs a normal command.
func checkServes(t *testing.T, s *testServer) {
	t.Helper()
	nonce := "still-serving-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	reply, err := postExec(http.DefaultClient, s.url, map[string]any{"argv": []string{"echo", nonce}})
	if err != nil || reply.Status != "exited" || deref(reply.Stdout) != nonce+"\n" {
		t.Errorf("a normal /exec afterwards = %+v, %v; want it served", reply, err)
	}
}

// checkGroupGone checks that the process group an /exec answer names is empty.
func checkGroupGone(t *testing.T, got map[string]any) {
	t.Helper()
	pid, _ := got["pid"].(float64)
	if pid <= 0 || !groupGone(int(pid)) {
		t.Errorf("process group %v still has members after the answer", got["pid"])
	}
}

// groupGone reports whether the process group pgid has no member left, zombies
// included.
func groupGone(pgid int) bool {
	return pgid > 0 && errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// quiesce closes the idle client connections, the test's and the helpers'
// (http.DefaultClient), lets the server notice, and returns the number of open
// descriptors of this process.
func quiesce(t *testing.T, tr *http.Transport) int {
	t.Helper()
	tr.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(50 * time.Millisecond)
	return openFDs(t)
}

// checkNoLeftovers checks, after a load, that the descriptors are back to
// before (within fdSlack) and that no new process is left.
func checkNoLeftovers(t *testing.T, tr *http.Transport, fdsBefore int, procsBefore map[int]string) {
	t.Helper()
	fds := quiesce(t, tr)
	for deadline := time.Now().Add(5 * time.Second); fds > fdsBefore+fdSlack && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		fds = openFDs(t)
	}
	t.Logf("open descriptors: %d before, %d after", fdsBefore, fds)
	if fds > fdsBefore+fdSlack {
		t.Errorf("%d descriptors open after the load, %d before: %s", fds, fdsBefore, fdTargets(t))
	}
	waitNoNewDescendants(t, procsBefore)
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// fdTargets lists what this process's descriptors point at, by kind.
func fdTargets(t *testing.T) string {
	t.Helper()
	entries, _ := os.ReadDir("/proc/self/fd")
	kinds := map[string]int{}
	for _, e := range entries {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue
		}
		if i := strings.IndexByte(target, ':'); i > 0 && !strings.HasPrefix(target, "/") {
			target = target[:i]
		}
		kinds[target]++
	}
	return fmt.Sprint(kinds)
}

// descendants returns the live (non-zombie) descendants of this process, by
// pid, with their command lines.
func descendants() map[int]string {
	parent := map[int]int{}
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:]) // state ppid ...
		if len(f) < 2 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "/proc/"), "/stat"))
		parent[pid], _ = strconv.Atoi(string(f[1]))
	}
	self := os.Getpid()
	out := map[int]string{}
	for pid := range parent {
		for p, hops := parent[pid], 0; p != 0 && hops < 64; p, hops = parent[p], hops+1 {
			if p == self {
				out[pid] = cmdline(pid)
				break
			}
		}
	}
	return out
}

// cmdline returns pid's command line, its arguments separated by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// waitNoNewDescendants waits until every live descendant of this process was
// already there in before.
func waitNoNewDescendants(t *testing.T, before map[int]string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for pid, cmd := range descendants() {
			if _, ok := before[pid]; !ok {
				left = append(left, fmt.Sprintf("%d %q", pid, cmd))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		t.Errorf("processes left running: %s", strings.Join(left, ", "))
	}
}

// waitGone waits until no live process anywhere has arg among its arguments.
func waitGone(t *testing.T, what, arg string) {
	t.Helper()
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pids = withArg(arg)
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(pids) > 0 {
		t.Errorf("%s (%s) is still running: pids %v", what, arg, pids)
	}
}

// withArg returns the live processes that have arg among their arguments.
func withArg(arg string) []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), arg) {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "/proc/"), "/cmdline")); err == nil && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// deref returns *p, or the zero value.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
