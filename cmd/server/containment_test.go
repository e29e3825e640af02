package main

// The containment suite: nothing the server starts outlives it, whether it
// stops on SIGTERM or is killed, and children start clean whatever the
// server inherited (issue 14, points 5 and 8).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestShutdownEndsCaptures stops a server with a real SIGTERM while four
// captures hang in their profiles: the captures are the manager's, so no
// capture shell is left once run returns.
func TestShutdownEndsCaptures(t *testing.T) {
	procsBefore := descendants()
	s := startServer(t, nil)
	const n = 4
	markers := make([]string, n)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range n {
		home := t.TempDir()
		markers[i] = fmt.Sprintf("61.%d%d", os.Getpid()%100000, i) // a sleep argument no one else uses
		writeTestFile(t, filepath.Join(home, ".bashrc"), "sleep "+markers[i]+"\n")
		body := mustJSON(t, snapshotBody(home, "echo ran", fmt.Sprintf("hang-%d", i), "bash", "/bin/bash"))
		wg.Go(func() {
			// What the request answers is the snapshot cache's business; only
			// that it returns matters here.
			if resp, err := client.Post(s.url+"/exec", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		})
	}
	waitFor(t, "the 4 captures to hang in their profiles", func() bool {
		for _, m := range markers {
			if len(withArg(m)) == 0 {
				return false
			}
		}
		return true
	})

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	defer signal.Stop(sigs)
	http.DefaultClient.CloseIdleConnections()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run() after SIGTERM = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run() did not return after SIGTERM")
	}
	s.cancel()
	s.cancel = nil
	for i, m := range markers {
		if pids := withArg(m); len(pids) > 0 {
			t.Errorf("capture %d's profile (sleep %s) still runs after the server stopped: pids %v", i, m, pids)
		}
	}
	wg.Wait()
	waitNoNewDescendants(t, procsBefore)
}

// serverProcess is this test binary run as the server (serverEnv): a process
// of its own, as the real binary is, with its own keeper and reaper.
type serverProcess struct {
	*testServer
	cmd *exec.Cmd
	// tree is what the test saw of the server's processes before it killed
	// the server, which then no longer leads to them; the cleanup ends them.
	tree map[int]string
}

// startServerProcess starts the server process through argv's wrapper (a
// shell that sets up what the server inherits, or nothing) and waits until
// /healthz answers. It is killed, with everything it started, when the test
// ends.
func startServerProcess(t *testing.T, wrapper []string, args ...string) *serverProcess {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append(slices.Clone(wrapper), self, "--addr", "127.0.0.1:0", "--grace", "300ms"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), serverEnv+"=1", "GORACE=atexit_sleep_ms=0")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serverProcess{testServer: &testServer{logs: logs}, cmd: cmd}
	t.Cleanup(func() {
		tree := descendantsOf(cmd.Process.Pid)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// The keeper ends the rest and removes the server's private
		// directories, unless it is killed first: it gets 5 s for that, and
		// what is left then is ended here.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && anyAlive(tree); {
			time.Sleep(5 * time.Millisecond)
		}
		killAll(tree)
		killAll(s.tree)
	})
	lines := bufio.NewScanner(stdout)
	for s.url == "" && lines.Scan() {
		if m := listenLine.FindStringSubmatch(lines.Text()); m != nil {
			s.url = m[1]
		}
	}
	if s.url == "" {
		t.Fatalf("the server process printed no listening line; logs:\n%s", logs)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // the server prints nothing more, but must never block on it
	waitFor(t, "/healthz", func() bool {
		resp, err := http.Get(s.url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// terminate stops the server process as a supervisor does, with SIGTERM, and
// checks that it exits with status 0 within 15 s (it is killed after that).
func (s *serverProcess) terminate(t *testing.T) {
	t.Helper()
	exited := make(chan error, 1)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM to the server process: %v", err)
	}
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the server process after SIGTERM: %v, want exit status 0; logs:\n%s", err, s.logs)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("the server process did not exit within 15 s of SIGTERM; logs:\n%s", s.logs)
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

// descendantsOf returns the live processes below root, by their parent links,
// with their command lines.
func descendantsOf(root int) map[int]string {
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
		if len(f) < 2 || string(f[0]) == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "/proc/"), "/stat"))
		parent[pid], _ = strconv.Atoi(string(f[1]))
	}
	out := map[int]string{}
	for pid := range parent {
		for p, hops := parent[pid], 0; p != 0 && hops < 64; p, hops = parent[p], hops+1 {
			if p == root {
				out[pid] = cmdline(pid)
				break
			}
		}
	}
	return out
}

// killAll kills what is left of procs, and reaps those that were re-parented
// to this process.
// anyAlive reports whether any of procs still runs.
func anyAlive(procs map[int]string) bool {
	for pid := range procs {
		if alive(pid) {
			return true
		}
	}
	return false
}

func killAll(procs map[int]string) {
	for pid := range procs {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for pid := range procs {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// leftItsGroup is a line of sh that waits until the process $p leads a group
// of its own (/proc/PID/stat's fifth field is its group): a command that ends
// before its setsid child has left its group has that child ended with the
// group after the drain, and leaves no escape. A busy machine (CI, with every
// package's tests at once) often runs the child that late.
const leftItsGroup = `until [ "$(cut -d' ' -f5 /proc/$p/stat)" = "$p" ]; do sleep 0.01; done` + "\n"

// TestKilledServerLeavesNothing kills a real server process with SIGKILL
// while it runs 5 background children with timeoutMs 5000 and their
// grandchildren, a capture hanging in its profile, a process that left its
// group under a live parent, and one it adopted after it left: its keeper
// kills them all within the 2 s issue 14 sets.
func TestKilledServerLeavesNothing(t *testing.T) {
	s := startServerProcess(t, nil)
	marker := func(n int) string { return fmt.Sprintf("62.%d%d", os.Getpid()%100000, n) } // sleep arguments no one else uses
	for i := range 5 {
		s.startProcess(t, map[string]any{"argv": []string{"sh", "-c", "sleep " + marker(1) + " & sleep " + marker(1)}, "timeoutMs": 5000, "processId": fmt.Sprint("bg-", i)})
	}
	s.startProcess(t, map[string]any{"argv": []string{"sh", "-c", "setsid sleep " + marker(2) + " & sleep " + marker(2)}})
	if code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"sh", "-c", "setsid sleep " + marker(3) + " & p=$!\n" + leftItsGroup + "echo left"}}); code != 200 || got["stdout"] != "left\n" {
		t.Fatalf("/exec leaving an escaped process = %d %v", code, got)
	}
	// A snapshot's state in the server's private directories, which the
	// keeper must remove too: it holds the profile's values.
	kept := t.TempDir()
	writeTestFile(t, filepath.Join(kept, ".bashrc"), "export KEPT_TOKEN=secret-"+marker(5)+"\n")
	if code, got, _ := s.post(t, "/exec", snapshotBody(kept, "echo $KEPT_TOKEN", "kept", "bash", "/bin/bash")); code != 200 || got["stdout"] != "secret-"+marker(5)+"\n" {
		t.Fatalf("/exec with a snapshot = %d %v", code, got)
	}
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "sleep "+marker(4)+"\n")
	go func() {
		// The capture hangs until the server dies; the request then fails.
		body := mustJSON(t, snapshotBody(home, "echo ran", "hang", "bash", "/bin/bash"))
		if resp, err := http.Post(s.url+"/exec", "application/json", strings.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "every process to run, and the escape to be counted", func() bool {
		return len(withArg(marker(1))) == 10 && len(withArg(marker(2))) == 2 && len(withArg(marker(3))) == 1 &&
			len(withArg(marker(4))) == 1 && escapedCount(t, s.testServer) >= 1
	})
	if !regexp.MustCompile(`"level":"warn","pid":\d+,"program":"(setsid|sleep)".*"message":"a process left its process group`).MatchString(s.logs.String()) {
		t.Errorf("no warning names the escaped process; logs:\n%s", s.logs)
	}

	tree := descendantsOf(s.cmd.Process.Pid)
	s.tree = tree
	private := keeperDirs(t, tree)
	if !containsText(private, "secret-"+marker(5)) {
		t.Fatalf("the server's private directories %v hold no snapshot state", private)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// Watched for longer than the bound, so that a failure says whether they
	// ended late or not at all.
	var left []string
	for deadline := killed.Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		left = left[:0]
		for pid, cmd := range tree {
			if alive(pid) {
				left = append(left, fmt.Sprintf("%d %.60q", pid, cmd))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	took := time.Since(killed).Round(time.Millisecond)
	switch {
	case len(left) > 0:
		t.Fatalf("10 s after kill -9 of the server, %d of its %d processes still run (issue 14's bound: 2 s):\n%s", len(left), len(tree), strings.Join(left, "\n"))
	case took > 2*time.Second:
		t.Errorf("the last of the server's %d processes ended %v after kill -9, beyond issue 14's bound of 2 s", len(tree), took)
	}
	t.Logf("the last of the server's %d processes ended %v after kill -9", len(tree), took)
	waitFor(t, "the keeper to remove the server's private directories "+strings.Join(private, ", "), func() bool {
		for _, dir := range private {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				return false
			}
		}
		return true
	})
}

// keeperDirs returns the directories the keeper among tree (pid to command
// line) was started to remove: its arguments.
func keeperDirs(t *testing.T, tree map[int]string) []string {
	t.Helper()
	for pid := range tree {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if err == nil && args[0] == "snapexec-keeper" {
			if len(args) < 2 {
				t.Fatalf("the keeper %d has no directories to remove: %q", pid, args)
			}
			return args[1:]
		}
	}
	t.Fatalf("no keeper among the server's processes %v", tree)
	return nil
}

// containsText reports whether a file below one of dirs contains text.
func containsText(dirs []string, text string) bool {
	found := false
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), text) {
					found = true
				}
			}
			return nil
		})
	}
	return found
}

// escapedCount is /stats' count of escaped processes.
func escapedCount(t *testing.T, s *testServer) int64 {
	t.Helper()
	_, body := s.get(t, "/stats")
	var st struct {
		Processes struct{ Escaped int64 }
	}
	_ = json.Unmarshal(body, &st)
	return st.Processes.Escaped
}

// TestServerStartedUnderNohupGivesCleanChildren starts a real server process
// as nohup and a shell's trap leave it (SIGHUP and SIGINT ignored), with
// SIGUSR1 and SIGUSR2 blocked too: its children still start with no signal
// ignored or blocked, and die of the hangup and interrupt a client sends.
func TestServerStartedUnderNohupGivesCleanChildren(t *testing.T) {
	// The child starts with the mask of the thread that forks it.
	runtime.LockOSThread()
	var block, old unix.Sigset_t
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2} {
		block.Val[(sig-1)/64] |= 1 << ((sig - 1) % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &block, &old); err != nil {
		t.Fatal(err)
	}
	s := startServerProcess(t, []string{"/bin/sh", "-c", `trap '' HUP INT; exec "$0" "$@"`})
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	runtime.UnlockOSThread()

	code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"cat", "/proc/self/status"}})
	stdout, _ := got["stdout"].(string)
	// Signals 32 to 34 are left out: libc and the Go runtime reserve them,
	// and GNU make (as in `make test`) starts everything with 32 and 33 ignored.
	for _, line := range []string{"SigIgn:\t0000000000000000", "SigBlk:\t0000000000000000"} {
		if code != 200 || !strings.Contains(withoutReservedSignals(stdout), "\n"+line+"\n") {
			t.Errorf("a child's /proc/self/status has no %q:\n%s", line, stdout)
		}
	}
	for _, tt := range []struct{ signal, want string }{{"hangup", "SIGHUP"}, {"interrupt", "SIGINT"}} {
		p := s.startProcess(t, map[string]any{"argv": []string{"sleep", "60"}, "timeoutMs": 10_000})
		id := p["processId"].(string)
		if code, got, _ := s.post(t, "/processes/"+id+"/signal", map[string]any{"signal": tt.signal}); code != 200 || got["delivered"] != true {
			t.Fatalf("signal %s = %d %v", tt.signal, code, got)
		}
		waitFor(t, "the child to end", func() bool { return s.process(t, id)["status"] != "running" })
		if got := s.process(t, id); got["status"] != "signaled" || got["signal"] != tt.want {
			t.Errorf("after %s the child is %v %v, want signaled by %s", tt.signal, got["status"], got["signal"], tt.want)
		}
	}
}

// withoutReservedSignals clears signals 32 to 34 in the SigIgn and SigBlk
// lines of a /proc status.
func withoutReservedSignals(status string) string {
	return regexp.MustCompile(`(?m)^(Sig(?:Ign|Blk):\t)([0-9a-f]{16})$`).ReplaceAllStringFunc(status, func(line string) string {
		name, mask, _ := strings.Cut(line, "\t")
		v, err := strconv.ParseUint(mask, 16, 64)
		if err != nil {
			return line
		}
		return fmt.Sprintf("%s\t%016x", name, v&^(0b111<<31))
	})
}

// TestInheritedDescriptorsStayWithTheServer: a descriptor the server
// inherited from whoever started it (here fd 7, open on a file) reaches
// none of its commands, sandboxed or not: a command that writes to it gets
// "Bad file descriptor", and the file stays empty.
func TestInheritedDescriptorsStayWithTheServer(t *testing.T) {
	leak := filepath.Join(t.TempDir(), "leak")
	s := startServerProcess(t, []string{"/bin/bash", "-c", `exec 7>>"$0"; exec "$@"`, leak})
	for _, body := range []map[string]any{
		{"argv": []string{"/bin/sh", "-c", "echo leaked >&7"}},
		{"argv": []string{"/bin/sh", "-c", "echo leaked >&7"}, "sandbox": map[string]any{"readOnly": true}},
	} {
		code, got, _ := s.post(t, "/exec", body)
		if code != http.StatusOK || got["exitCode"] == 0.0 || !strings.Contains(fmt.Sprint(got["stderr"]), "Bad file descriptor") {
			t.Errorf("POST /exec %v = %d %v, want fd 7 closed in the command", body, code, got)
		}
	}
	if data, err := os.ReadFile(leak); err != nil || len(data) != 0 {
		t.Errorf("the server's inherited file holds %q (%v), want it empty", data, err)
	}
}
