package exec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// miniServer is a helper that does what the server does with processes: a
// keeper, a reaper and a manager. It starts a group with a grandchild, a
// group whose child left it (setsid) while its parent stays, a command that
// leaves such a process behind when it ends (adopted: an escape), and an
// unlisted process; prints "escaped <pid> <program> <group>" for the escape
// and "pids ..." for every process it made; then waits for its stdin to
// close, shuts down as the server does, and prints the escapes found meanwhile
// and "stopped <escaped total>".
func miniServer() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	keeper, err := StartKeeper(nil, nil)
	if err != nil {
		return fail(err)
	}
	escapes := make(chan Escape, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := NewReaper(ctx, ReaperOptions{Keeper: keeper, OnEscape: func(e Escape) { escapes <- e }})
	if err != nil {
		return fail(err)
	}
	m := NewManager(Options{Reaper: r, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond})
	pids := []int{keeper.Pid()}
	path := []string{"PATH=/usr/bin:/bin"}
	firstLine := func(p *Process) (int, error) {
		r, err := p.Read(ctx, 0, 0, 10*time.Second)
		if err != nil || len(r.Chunks) == 0 {
			return 0, fmt.Errorf("no pid line: %v", err)
		}
		return strconv.Atoi(strings.TrimSpace(string(r.Chunks[0].Data)))
	}
	for _, script := range []string{
		"sleep 300 & echo $!; sleep 300",        // a grandchild in the group
		"setsid sleep 300 & echo $!; sleep 300", // a grandchild that left the group, its parent still in it
	} {
		p, err := m.Start(Spec{Argv: []string{"/bin/sh", "-c", script}, Env: path})
		if err != nil {
			return fail(err)
		}
		gc, err := firstLine(p)
		if err != nil {
			return fail(err)
		}
		pids = append(pids, p.Pid(), gc)
	}
	left, err := m.Run(ctx, Spec{Argv: []string{"/bin/sh", "-c", "setsid sleep 300 & p=$!\n" + leftItsGroup + "echo $p"}, Env: path})
	if err != nil {
		return fail(err)
	}
	escapee, err := strconv.Atoi(strings.TrimSpace(string(left.Result().Stdout.Data)))
	if err != nil {
		return fail(err)
	}
	unlisted, err := m.Spawn(Spec{Argv: []string{"/bin/sleep", "300"}})
	if err != nil {
		return fail(err)
	}
	pids = append(pids, escapee, unlisted.Pid())
	fmt.Println("ran", left.Pid())
	r.Kick()
	select {
	case e := <-escapes:
		fmt.Println("escaped", e.Pid, e.Program, e.Group)
	case <-time.After(20 * time.Second):
		return fail(fmt.Errorf("escape of %d not reported", escapee))
	}
	fmt.Println("pids", strings.Trim(fmt.Sprint(pids), "[]"))

	_, _ = io.Copy(io.Discard, os.Stdin)
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := m.Shutdown(sctx); err != nil {
		return fail(err)
	}
	if err := r.Shutdown(sctx); err != nil {
		return fail(err)
	}
	if err := keeper.Close(); err != nil {
		return fail(err)
	}
	for len(escapes) > 0 {
		e := <-escapes
		fmt.Println("escaped", e.Pid, e.Program, e.Group)
	}
	fmt.Println("stopped", r.Escaped())
	return 0
}

// leftItsGroup is a line of sh that waits until the process $p leads a group
// of its own (/proc/PID/stat's fifth field is its group): a command that ends
// before its setsid child has left its group has that child ended with the
// group after the drain, and leaves no escape. A busy machine (CI, with every
// package's tests at once) often runs the child that late.
const leftItsGroup = `until [ "$(cut -d' ' -f5 /proc/$p/stat)" = "$p" ]; do sleep 0.01; done` + "\n"

// miniServerRun is a running miniServer.
type miniServerRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	pids  []int
	ran   int // the group of the command that left the escape behind
	first Escape
}

func startMiniServer(t *testing.T) *miniServerRun {
	t.Helper()
	spec := helperSpec(t, "mini-server")
	cmd := exec.Command(spec.Argv[0])
	cmd.Env = spec.Env
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &miniServerRun{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// A failed test leaves nothing either. A group that still exists
		// still owns its id, as a live process does.
		for _, pid := range s.pids {
			if groupAlive(pid) {
				signalGroup(pid, syscall.SIGKILL)
			}
			if pidAlive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	for s.pids == nil && s.out.Scan() {
		f := strings.Fields(s.out.Text())
		switch f[0] {
		case "escaped":
			s.first = parseEscape(t, f)
		case "ran":
			s.ran, _ = strconv.Atoi(f[1])
		case "pids":
			for _, w := range f[1:] {
				pid, _ := strconv.Atoi(w)
				s.pids = append(s.pids, pid)
			}
		}
	}
	if len(s.pids) != 7 {
		t.Fatalf("mini server's pids = %v, want 7 (%v)", s.pids, s.out.Err())
	}
	for _, pid := range s.pids {
		if !pidAlive(pid) {
			t.Fatalf("process %d of %v is not running", pid, s.pids)
		}
	}
	return s
}

func parseEscape(t *testing.T, f []string) Escape {
	t.Helper()
	if len(f) != 4 {
		t.Fatalf("escape line %q", f)
	}
	pid, _ := strconv.Atoi(f[1])
	group, _ := strconv.Atoi(f[3])
	return Escape{Pid: pid, Program: f[2], Group: group}
}

// TestKeeperEndsEverythingWhenTheServerIsKilled kills a server (the mini
// server) with SIGKILL: its keeper kills every group, grandchild, escaped and
// unlisted process it had, within 2 s (issue 14's bound), and exits.
func TestKeeperEndsEverythingWhenTheServerIsKilled(t *testing.T) {
	s := startMiniServer(t)
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// Watched for longer than the bound, so that a failure says whether they
	// ended late or not at all.
	var left []int
	for deadline := killed.Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		left = left[:0]
		for _, pid := range s.pids {
			if pidAlive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	took := time.Since(killed).Round(time.Millisecond)
	switch {
	case len(left) > 0:
		t.Fatalf("10 s after the server was killed, %d of its %d processes (keeper first) still run (issue 14's bound: 2 s): %v of %v", len(left), len(s.pids), left, s.pids)
	case took > 2*time.Second:
		t.Errorf("the last of %d processes ended %v after SIGKILL to the server, beyond issue 14's bound of 2 s", len(s.pids), took)
	}
	t.Logf("the last of %d processes ended %v after SIGKILL to the server", len(s.pids), took)
}

// TestEscapesAreReportedAndEndedAtShutdown: the escape is reported once with
// its program name; at shutdown the escape that was still under its parent
// is adopted, reported with the group it left, and ended with everything
// else, the keeper included.
func TestEscapesAreReportedAndEndedAtShutdown(t *testing.T) {
	s := startMiniServer(t)
	escapee := s.pids[5]
	// Its program is setsid until setsid execs sleep; the group it left is
	// known only if a look came while it had a parent.
	if s.first.Pid != escapee || (s.first.Program != "sleep" && s.first.Program != "setsid") || (s.first.Group != 0 && s.first.Group != s.ran) {
		t.Errorf("first escape = %+v, want pid %d, program sleep (or setsid), group %d or unknown", s.first, escapee, s.ran)
	}
	_ = s.stdin.Close()
	var escapes []Escape
	stopped := ""
	for s.out.Scan() {
		f := strings.Fields(s.out.Text())
		switch f[0] {
		case "escaped":
			escapes = append(escapes, parseEscape(t, f))
		case "stopped":
			stopped = f[1]
		}
	}
	if err := s.cmd.Wait(); err != nil || stopped != "2" {
		t.Fatalf("mini server stopped with %v, escaped total %q; want a clean stop, 2", err, stopped)
	}
	underParent, group := s.pids[4], s.pids[3]
	if len(escapes) != 1 || escapes[0].Pid != underParent || escapes[0].Group != group {
		t.Errorf("escapes found at shutdown = %+v, want pid %d from group %d", escapes, underParent, group)
	}
	for _, pid := range s.pids {
		if pidAlive(pid) {
			t.Errorf("process %d of %v alive after the shutdown", pid, s.pids)
		}
	}
}

// BenchmarkKeeperRecords is what the keeper adds to every spawn: the record
// of its group's start and of its end, each one pipe write.
func BenchmarkKeeperRecords(b *testing.B) {
	k, err := StartKeeper(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	// A pid that is no process's: a record of it can never end anything.
	const pid = 1 << 30
	for b.Loop() {
		k.send(recordGroup, pid)
		k.send(recordGroupEnded, pid)
	}
}

// record is one of the keeper's records.
type record struct {
	kind byte
	pid  int
}

// recordsOf encodes records as the server's Keeper writes them.
func recordsOf(recs ...record) []byte {
	var out []byte
	for _, r := range recs {
		var rec [recordSize]byte
		rec[0] = r.kind
		binary.LittleEndian.PutUint32(rec[1:], uint32(r.pid))
		out = append(out, rec[:]...)
	}
	return out
}

// countedReader counts the reads of r and returns at most max bytes from each.
type countedReader struct {
	r     io.Reader
	max   int
	reads int
}

func (c *countedReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p[:min(len(p), c.max)])
}

// TestKeeperRecordsCutAcrossReads: a read may end inside a record; the
// record's rest comes with the next read, and every record counts.
func TestKeeperRecordsCutAcrossReads(t *testing.T) {
	in := recordsOf(record{recordGroup, 10}, record{recordGroup, 11}, record{recordGroupEnded, 10},
		record{recordEscape, 12}, record{recordEscape, 13}, record{recordEscapeEnded, 13})
	for _, max := range []int{1, 3, recordSize, 7, len(in)} {
		groups, escaped := readRecords(&countedReader{r: bytes.NewReader(in), max: max})
		if fmt.Sprint(groups, escaped) != "map[11:true] map[12:true]" {
			t.Errorf("readRecords(reads of %d bytes) = %v, %v; want groups {11}, escaped {12}", max, groups, escaped)
		}
	}
}

// TestKeeperReadsRecordsInBulk: records that arrived together are read
// together, not one read (one wake-up of the keeper) each.
func TestKeeperReadsRecordsInBulk(t *testing.T) {
	var recs []record
	for pid := range 1000 {
		recs = append(recs, record{recordGroup, pid}, record{recordGroupEnded, pid})
	}
	in := &countedReader{r: bytes.NewReader(recordsOf(recs...)), max: math.MaxInt}
	if groups, escaped := readRecords(in); len(groups)+len(escaped) != 0 || in.reads > 2 {
		t.Errorf("readRecords(2000 records at once) = %d groups, %d escaped in %d reads; want none, in 2 reads at most", len(groups), len(escaped), in.reads)
	}
}

// TestKeeperRemovesDirectories: once the server's end of the pipe closes (a
// clean Close here; a killed server's closes the same way), the keeper removes
// the directories it was started with, and everything in them; it refuses a
// relative path or the root.
func TestKeeperRemovesDirectories(t *testing.T) {
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "files"), filepath.Join(base, "scratch")}
	for _, dir := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sub", "state"), []byte("export TOKEN=secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k, err := StartKeeper(nil, dirs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirs[0]); err != nil {
		t.Fatalf("the keeper removed %s while the server lives: %v", dirs[0], err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("after the keeper: Stat(%s) = %v, want it removed", dir, err)
		}
	}
	if _, err := os.Stat(base); err != nil {
		t.Errorf("the keeper removed more than it was given: %v", err)
	}
	for _, bad := range []string{"relative/dir", "/", "//"} {
		if k, err := StartKeeper(nil, []string{bad}); err == nil {
			k.Close()
			t.Errorf("StartKeeper(%q) started; want an error", bad)
		}
	}
}
