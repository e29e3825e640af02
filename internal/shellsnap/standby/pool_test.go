package standby

import (
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

func TestStandbyKeyIsTheWholeLaunch(t *testing.T) {
	snap, other := &shellsnap.Snapshot{}, &shellsnap.Snapshot{}
	base := exec.Spec{Argv: []string{"/bin/bash", "-pc", "x"}, Dir: "/tmp", Env: []string{"A=1", "B=2", shellsnap.StateEnvPrefix + "0=state"}}
	key := keyOf(snap, base)

	same := base
	same.Argv = []string{"/bin/bash", "-pc", "another script"}
	same.Env = []string{"A=1", "B=2", shellsnap.StateEnvPrefix + "0=other state text"}
	if keyOf(snap, same) != key {
		t.Errorf("a launch that differs only in its script and state chunks has another key")
	}
	differ := map[string]exec.Spec{
		"env value":   {Argv: base.Argv, Dir: base.Dir, Env: []string{"A=1", "B=3"}},
		"env name":    {Argv: base.Argv, Dir: base.Dir, Env: []string{"A=1", "C=2"}},
		"env split":   {Argv: base.Argv, Dir: base.Dir, Env: []string{"A=1\x00B=2"}},
		"cwd":         {Argv: base.Argv, Dir: "/", Env: base.Env},
		"shell":       {Argv: []string{"/usr/bin/bash", "-pc", "x"}, Dir: base.Dir, Env: base.Env},
		"output size": {Argv: base.Argv, Dir: base.Dir, Env: base.Env, MaxOutputBytes: 10},
	}
	for name, spec := range differ {
		if keyOf(snap, spec) == key {
			t.Errorf("launches that differ in %s share a key", name)
		}
	}
	if keyOf(other, base) == key {
		t.Errorf("launches of two snapshots share a key")
	}
}

func TestSeenLaunchesAreBounded(t *testing.T) {
	sb, err := New(nil, func(*shellsnap.Snapshot) bool { return true }, Options{Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	var first launchID
	first[0] = 1
	if sb.seenLocked(first) {
		t.Fatalf("a launch's first run counts as a repeat")
	}
	if !sb.seenLocked(first) {
		t.Fatalf("a launch's second run does not count as a repeat")
	}
	for i := range 3 * maxSeenLaunches {
		var l launchID
		l[1], l[2] = byte(i), byte(i>>8)
		sb.seenLocked(l)
	}
	if n := len(sb.seen); n > maxSeenLaunches {
		t.Fatalf("%d launches remembered, want at most %d", n, maxSeenLaunches)
	}
}
