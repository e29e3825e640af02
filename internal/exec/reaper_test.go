package exec

import (
	"os"
	"os/exec"
	"testing"
)

// TestLeaderThatEndedIsNoEscape: a look reads the process table before it
// takes its locks, so its table may show a leader that has ended since, its
// group recorded ended: an own child outside every recorded group, as an
// escape is. The look must not count it, report it, or tell the keeper of a
// pid that is free for anyone.
func TestLeaderThatEndedIsNoEscape(t *testing.T) {
	m := testManager()
	p, err := m.Start(Spec{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	procs := readProcTable()
	if e, ok := procs[p.Pid()]; !ok || e.ppid != os.Getpid() {
		t.Fatalf("the table does not show the leader %d as this process's child: %+v", p.Pid(), e)
	}
	p.Terminate(StatusTerminated)
	<-p.Done()
	testReaper.judge(procs)
	testReaper.mu.Lock()
	_, escaped := testReaper.escaped[p.Pid()]
	testReaper.mu.Unlock()
	if escaped {
		t.Errorf("a look with a table read before leader %d ended took it for an escape", p.Pid())
	}
}

// TestDescendsFrom: a process descends from itself and its parent, a child
// of ours from us, and we not from our child.
func TestDescendsFrom(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	self := os.Getpid()
	for _, c := range []struct {
		pid, ancestor int
		want          bool
	}{{self, self, true}, {self, os.Getppid(), true}, {cmd.Process.Pid, self, true}, {self, cmd.Process.Pid, false}} {
		if got := DescendsFrom(c.pid, c.ancestor); got != c.want {
			t.Errorf("DescendsFrom(%d, %d) = %v, want %v", c.pid, c.ancestor, got, c.want)
		}
	}
}
