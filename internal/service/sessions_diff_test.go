package service

import (
	"context"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/session/sessiontest"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// The differential test of sessions (docs/design/sessions.md#how-it-is-shown):
// generated sequences of state-changing commands run once through a session
// and once in one persistent bash fed the same commands through a pipe; after
// each command a probe must print the same both ways.

func TestSessionMatchesPersistentBash(t *testing.T) {
	sequences := 200
	if testing.Short() {
		sequences = 20
	}
	s := newSessionService(t, session.Options{})
	for n := range sequences {
		ok := sessiontest.Sequence(t, n, func(home string, env map[string]string) sessiontest.Session {
			info, err := s.CreateSession(context.Background(), SessionInput{Shell: shellsnap.Shell{Name: "bash", Path: "/bin/bash"}, Cwd: &home, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.DeleteSession(info.ID) })
			return serviceSession{s, info.ID}
		})
		if !ok {
			t.FailNow()
		}
	}
}

// serviceSession is a session of the service.
type serviceSession struct {
	s  *Service
	id string
}

func (ss serviceSession) Run(t *testing.T, script string) (stdout, stderr string, kept bool, reason string) {
	t.Helper()
	out, err := ss.s.SessionExec(context.Background(), ss.id, SessionExecInput{Script: script, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return string(out.Result.Stdout.Data), string(out.Result.Stderr.Data), out.Session.StateKept, out.Session.Reason
}
