package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// standbyMarker is in the command line of every standby shell.
const standbyMarker = "__CODEX_SHELL_SNAPSHOT_SCRIPT"

// standbyPids returns the standby shells among this process's descendants.
func standbyPids() []int {
	var pids []int
	for pid, cmd := range descendants() {
		if strings.Contains(cmd, standbyMarker) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// waitStandbys waits until exactly n standby shells run and, unless srv is
// nil (stopped), until its /stats counts n idle: a shell runs a moment before
// the server can hand it a command.
func waitStandbys(t *testing.T, srv *testServer, n int) []int {
	t.Helper()
	var pids []int
	idle := -1
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pids = standbyPids()
		if srv != nil {
			idle = idleStandbys(t, srv)
		}
		if len(pids) == n && (srv == nil || idle == n) || time.Now().After(deadline) {
			break
		}
	}
	if len(pids) != n || srv != nil && idle != n {
		t.Fatalf("standby shells running: %v, idle per /stats: %d; want %d", pids, idle, n)
	}
	return pids
}

// idleStandbys is the server's count of idle standby shells.
func idleStandbys(t *testing.T, srv *testServer) int {
	t.Helper()
	_, body := srv.get(t, "/stats")
	var st struct {
		Snapshots struct {
			Standby struct{ Idle int }
		}
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("/stats: %v", err)
	}
	return st.Snapshots.Standby.Idle
}

func receiptOf(got map[string]any) map[string]any {
	r, _ := got["snapshot"].(map[string]any)
	return r
}

func TestStandbyServesTheNextWarmCommand(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "export FROM_PROFILE=yes\ngreet() { echo \"hello $1\"; }\nset -o pipefail\n")
	const scope = "standby"

	code, got, _ := s.post(t, "/exec", snapshotBody(home, "greet a", scope, "bash", "/bin/bash"))
	if r := receiptOf(got); code != 200 || got["stdout"] != "hello a\n" || r["state"] != "on_demand" || r["standby"] != false {
		t.Fatalf("first command = %d %v, want hello a, captured on demand, not in a standby", code, got)
	}
	// A launch earns a standby when it repeats, not on its first command.
	time.Sleep(100 * time.Millisecond)
	waitStandbys(t, s, 0)
	if _, got, _ = s.post(t, "/exec", snapshotBody(home, "greet z", scope, "bash", "/bin/bash")); got["stdout"] != "hello z\n" || receiptOf(got)["standby"] != false {
		t.Fatalf("repeated launch = %v, want hello z, not yet in a standby", got)
	}
	standby := waitStandbys(t, s, 1)[0]

	// Another script of the same launch: the standby runs it, with the
	// profile's functions, exports and options (pipefail makes the status 1).
	code, got, _ = s.post(t, "/exec", snapshotBody(home, "greet b; echo $FROM_PROFILE; false | true; echo $?", scope, "bash", "/bin/bash"))
	if r := receiptOf(got); code != 200 || got["stdout"] != "hello b\nyes\n1\n" || got["stderr"] != "" || r["state"] != "cache_hit" || r["standby"] != true {
		t.Fatalf("second command = %d %v, want hello b, yes, 1 from a standby on a cache hit", code, got)
	}
	if pid := int(got["pid"].(float64)); pid != standby {
		t.Errorf("second command ran as pid %d, want the standby's pid %d", pid, standby)
	}
	id := got["processId"].(string)
	if _, p := s.get(t, "/processes/"+id); !strings.Contains(string(p), `"status":"exited"`) {
		t.Errorf("GET /processes/%s = %s, want the standby's command in the table like any other", id, p)
	}
	// Its successor is ready for the next command.
	if next := waitStandbys(t, s, 1)[0]; next == standby {
		t.Errorf("standby after the second command = pid %d, want a new one", next)
	}
	_, stats := s.get(t, "/stats")
	if !strings.Contains(string(stats), `"standby":{"hit":1,"idle":1,"max":4,"miss":2,"unfit":0}`) {
		t.Errorf("/stats = %s, want standby hit 1, idle 1 of 4, miss 2 (the capture and the repeat), unfit 0", stats)
	}
	_, metrics := s.get(t, "/metrics")
	if !strings.Contains(string(metrics), `snapexec_standby_commands_total{`) || !strings.Contains(string(metrics), `result="hit"`) {
		t.Errorf("/metrics lacks snapexec_standby_commands_total with result=\"hit\"")
	}

	// A program run last takes the shell's place, as in a fresh shell: its
	// crash is the process's own signal, not an exit code from bash.
	waitStandbys(t, s, 1)
	if _, got, _ = s.post(t, "/exec", snapshotBody(home, "echo before; sh -c 'kill -SEGV $$'", scope, "bash", "/bin/bash")); got["status"] != "signaled" || got["signal"] != "SIGSEGV" || receiptOf(got)["standby"] != true {
		t.Errorf("standby command whose program crashes = %v, want signaled SIGSEGV from a standby", got)
	}
	waitStandbys(t, s, 1)

	// A program run last after a profile function, which might have set a
	// trap: only a fresh replay can tell what bash does, so one runs it, and
	// the standby waits on.
	if _, got, _ = s.post(t, "/exec", snapshotBody(home, "greet q; cat /dev/null", scope, "bash", "/bin/bash")); got["stdout"] != "hello q\n" || receiptOf(got)["standby"] != false {
		t.Errorf("unfit script = %v, want hello q from a fresh replay", got)
	}
	waitStandbys(t, s, 1)

	// Another launch (its env differs) gets no standby of this one, and none
	// of its own until it repeats.
	other := snapshotBody(home, "echo $EXTRA", scope, "bash", "/bin/bash")
	other["env"].(map[string]string)["EXTRA"] = "x"
	if _, got, _ = s.post(t, "/exec", other); got["stdout"] != "x\n" || receiptOf(got)["standby"] != false {
		t.Errorf("command of another launch = %v, want x, not from the first launch's standby", got)
	}
	time.Sleep(100 * time.Millisecond)
	waitStandbys(t, s, 1)
	s.post(t, "/exec", other)
	waitStandbys(t, s, 2)

	// Forgetting the scope ends its standbys.
	if code := s.delete(t, "/snapshots/"+scope); code != http.StatusNoContent {
		t.Fatalf("DELETE /snapshots/%s = %d, want 204", scope, code)
	}
	waitStandbys(t, s, 0)
}

// standbyReady starts a server and runs a bash launch of scope twice, in a
// HOME of its own, so that its standby waits; it returns the server and HOME.
func standbyReady(t *testing.T, scope string) (*testServer, string) {
	t.Helper()
	s := startServer(t, nil)
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "f() { :; }\n")
	for range 2 {
		s.post(t, "/exec", snapshotBody(home, "true", scope, "bash", "/bin/bash"))
	}
	waitStandbys(t, s, 1)
	return s, home
}

func TestStandbyLimitsStartAtRelease(t *testing.T) {
	s, home := standbyReady(t, "limits")
	time.Sleep(400 * time.Millisecond) // longer than the timeout below: it must count from the release

	body := snapshotBody(home, "echo started; sleep 5", "limits", "bash", "/bin/bash")
	body["timeoutMs"] = 300
	start := time.Now()
	_, got, _ := s.post(t, "/exec", body)
	elapsed := time.Since(start)
	if got["status"] != "timed_out" || got["stdout"] != "started\n" || receiptOf(got)["standby"] != true {
		t.Fatalf("standby command with timeoutMs 300 = %v, want timed_out after printing started", got)
	}
	if elapsed < 250*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("timed out after %v, want about 300 ms from the request", elapsed)
	}
	s.delete(t, "/snapshots/limits")
	waitStandbys(t, s, 0)
}

func TestStandbyBounds(t *testing.T) {
	s := startServer(t, nil, "--standby-shells", "1", "--standby-idle", "1s")
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "f() { :; }\n")
	launch := func(n int) map[string]any {
		b := snapshotBody(home, "true", "bounds", "bash", "/bin/bash")
		b["env"].(map[string]string)["LAUNCH"] = fmt.Sprint(n)
		return b
	}
	s.post(t, "/exec", launch(1))
	s.post(t, "/exec", launch(1))
	first := waitStandbys(t, s, 1)[0]
	s.post(t, "/exec", launch(2))
	s.post(t, "/exec", launch(2))
	// One idle standby at most: the second launch's replaces the first's.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pids := standbyPids(); len(pids) == 1 && pids[0] != first {
			break
		}
	}
	if pids := standbyPids(); len(pids) != 1 || pids[0] == first {
		t.Fatalf("standbys after a second launch with --standby-shells 1 = %v, want one, not the first launch's %d", pids, first)
	}
	if _, got, _ := s.post(t, "/exec", launch(1)); receiptOf(got)["standby"] != false {
		t.Errorf("first launch after its standby was ended = %v, want it run without one", receiptOf(got))
	}
	// Idle standbys end after --standby-idle.
	time.Sleep(1500 * time.Millisecond)
	waitStandbys(t, s, 0)
}

func TestStandbyDisabled(t *testing.T) {
	s := startServer(t, nil, "--standby-shells", "0")
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "f() { :; }\n")
	for range 3 {
		if _, got, _ := s.post(t, "/exec", snapshotBody(home, "f && echo ok", "off", "bash", "/bin/bash")); got["stdout"] != "ok\n" || receiptOf(got)["standby"] != false {
			t.Fatalf("with --standby-shells 0: %v, want ok without a standby", got)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if pids := standbyPids(); len(pids) != 0 {
		t.Fatalf("standby shells with --standby-shells 0: %v, want none", pids)
	}
}

func TestShutdownEndsStandbys(t *testing.T) {
	s, _ := standbyReady(t, "shutdown")
	s.stop(t)
	waitStandbys(t, nil, 0)
}

func TestStandbyOfAReplacedDirectoryIsNotUsed(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "f() { :; }\n")
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	body := snapshotBody(home, "ls -A", "replaced", "bash", "/bin/bash")
	body["cwd"] = work
	for range 2 {
		s.post(t, "/exec", body)
	}
	waitStandbys(t, s, 1)
	// The directory is removed and made again: the standby sits in the old one.
	if err := os.Remove(work); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(work, "new-file"), "")
	_, got, _ := s.post(t, "/exec", body)
	if got["stdout"] != "new-file\n" || receiptOf(got)["standby"] != false {
		t.Fatalf("command after its cwd was replaced = %v, want new-file listed by a fresh shell", got)
	}
	s.delete(t, "/snapshots/replaced")
	waitStandbys(t, s, 0)
}

func TestStandbyOfAStaleSnapshotIsReplaced(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	writeTestFile(t, rc, "version() { echo one; }\n")
	body := snapshotBody(home, "version", "stale", "bash", "/bin/bash")
	for range 2 {
		s.post(t, "/exec", body)
	}
	old := waitStandbys(t, s, 1)[0]
	writeTestFile(t, rc, "version() { echo two; }\n# longer, so that the stamp changes\n")
	if _, got, _ := s.post(t, "/exec", body); got["stdout"] != "two\n" || receiptOf(got)["standby"] != false {
		t.Fatalf("command after the profile changed = %v, want two from a fresh capture, not the old standby", got)
	}
	// The stale snapshot's standby ends; the new one's takes its place.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pids := standbyPids(); len(pids) == 1 && pids[0] != old {
			break
		}
	}
	if pids := standbyPids(); len(pids) != 1 || pids[0] == old {
		t.Fatalf("standbys after the profile changed = %v, want one that is not the stale %d", pids, old)
	}
	waitStandbys(t, s, 1)
	if _, got, _ := s.post(t, "/exec", body); got["stdout"] != "two\n" || receiptOf(got)["standby"] != true {
		t.Fatalf("next command = %v, want two from the new standby", got)
	}
}

func TestStandbyFlags(t *testing.T) {
	var stderr bytes.Buffer
	none := func(string) string { return "" }
	for _, args := range [][]string{{"--standby-shells", "-1"}, {"--standby-idle", "0s"}} {
		if _, err := parseConfig(append([]string{"snapexec"}, args...), none, &stderr); err == nil || !strings.Contains(err.Error(), "--standby") {
			t.Errorf("parseConfig(%q) error = %v, want a --standby refusal", args, err)
		}
	}
	c, err := parseConfig([]string{"snapexec"}, func(k string) string {
		if k == "SNAPEXEC_STANDBY_IDLE" {
			return "5s"
		}
		return ""
	}, &stderr)
	if err != nil || c.standbyShells != 4 || c.standbyIdle != 5*time.Second {
		t.Errorf("parseConfig defaults with SNAPEXEC_STANDBY_IDLE=5s = %d shells, idle %v, %v; want 4, 5s, nil", c.standbyShells, c.standbyIdle, err)
	}
}
