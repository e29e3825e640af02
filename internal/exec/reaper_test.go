package exec

import (
	"os"
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
