package service

import (
	"context"
	"errors"
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

var bash = shellsnap.Shell{Name: "bash", Path: "/bin/bash"}

// TestPrewarmWithoutWait: a prewarm that does not wait answers the entry
// pending; a command meanwhile uses the prewarm's capture (prewarm_pending),
// and the next one finds it ready (cmd/server's test of the same name; the
// handlers answer such a prewarm 202).
func TestPrewarmWithoutWait(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	home := bashHome(t, ".bashrc", "sleep 0.3\n")
	e, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "nowait", Shell: bash, Cwd: &home,
		Env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}})
	if err != nil || e.State != shellsnap.EntryPending {
		t.Errorf("Prewarm(wait false) = %+v, %v; want the entry pending", e, err)
	}
	in := snapshotExec(home, "true", "nowait", "bash", "/bin/bash")
	if out, _ := s.Exec(context.Background(), in); out.Snapshot.State != shellsnap.StatePrewarmPending || out.Snapshot.Outcome != shellsnap.OutcomeUsed {
		t.Errorf("command during the prewarm = %+v, want prewarm_pending used", out.Snapshot)
	}
	if out, _ := s.Exec(context.Background(), in); out.Snapshot.State != shellsnap.StatePrewarmReady {
		t.Errorf("command after the prewarm = %+v, want prewarm_ready", out.Snapshot)
	}
}

// TestPrewarmChecksTheCwd: a prewarm's cwd that is not a directory is the
// request's fault (exec.ErrCwdNotFound, 422), found before any capture runs,
// not a capture failure (502).
func TestPrewarmChecksTheCwd(t *testing.T) {
	s := newRealService(t, exec.Options{}, Options{})
	missing := t.TempDir() + "/nope"
	for _, wait := range []bool{true, false} {
		_, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "cwd", Shell: bash, Cwd: &missing, Wait: wait})
		if !errors.Is(err, exec.ErrCwdNotFound) {
			t.Errorf("Prewarm(wait %v) in a missing cwd = %v, want ErrCwdNotFound", wait, err)
		}
	}
	if e := s.Snapshots(); len(e) != 0 {
		t.Errorf("entries after the refusals = %+v, want none", e)
	}
	relative := "home"
	if _, err := s.Prewarm(context.Background(), PrewarmInput{ScopeID: "cwd", Shell: bash, Cwd: &relative}); fieldOf(err) != "cwd" {
		t.Errorf("Prewarm() in a relative cwd = %v, want a field error on cwd", err)
	}
}
