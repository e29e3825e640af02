package handlers

import (
	"context"
	"net/http"

	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// CreateSession creates a session at its first state.
func (s *Server) CreateSession(ctx context.Context, req CreateSessionRequestObject) (CreateSessionResponseObject, error) {
	b := req.Body
	in := service.SessionInput{
		SessionID: orZero(b.SessionId),
		Shell:     shellsnap.Shell{Name: b.Shell.Name, Path: b.Shell.Path},
		Cwd:       b.Cwd,
		Env:       orZero(b.Env),
		EnvPolicy: policyFrom(b.EnvPolicy),
		Sandbox:   sandboxFrom(b.Sandbox),
	}
	if b.ShellSnapshot != nil {
		in.ScopeID = &b.ShellSnapshot.ScopeId
	}
	info, err := s.sessions.CreateSession(ctx, in)
	if err != nil {
		return nil, err
	}
	return CreateSession201JSONResponse(sessionView(info)), nil
}

// ListSessions lists the sessions.
func (s *Server) ListSessions(context.Context, ListSessionsRequestObject) (ListSessionsResponseObject, error) {
	list := s.sessions.Sessions()
	out := ListSessions200JSONResponse{Sessions: make([]Session, len(list))}
	for i, in := range list {
		out.Sessions[i] = sessionView(in)
	}
	return out, nil
}

// GetSession answers one session.
func (s *Server) GetSession(_ context.Context, req GetSessionRequestObject) (GetSessionResponseObject, error) {
	info, err := s.sessions.Session(req.SessionId)
	if err != nil {
		return nil, err
	}
	return GetSession200JSONResponse(sessionView(info)), nil
}

// DeleteSession ends a session.
func (s *Server) DeleteSession(_ context.Context, req DeleteSessionRequestObject) (DeleteSessionResponseObject, error) {
	if err := s.sessions.DeleteSession(req.SessionId); err != nil {
		return nil, err
	}
	return DeleteSession204Response{}, nil
}

// ForkSession adds a session from another's current state.
func (s *Server) ForkSession(_ context.Context, req ForkSessionRequestObject) (ForkSessionResponseObject, error) {
	var id string
	if req.Body != nil {
		id = orZero(req.Body.SessionId)
	}
	info, err := s.sessions.ForkSession(req.SessionId, id)
	if err != nil {
		return nil, err
	}
	return ForkSession201JSONResponse(sessionView(info)), nil
}

// SessionExec runs a command in a session, or streams it to a client that
// asks for events.
func (s *Server) SessionExec(ctx context.Context, req SessionExecRequestObject) (SessionExecResponseObject, error) {
	b := req.Body
	in := service.SessionExecInput{
		Script:         b.Script,
		Stdin:          stdinBytes(b.Stdin),
		Timeout:        millis(b.TimeoutMs),
		IdleTimeout:    millis(b.IdleTimeoutMs),
		MaxOutputBytes: maxOutputBytes(b.MaxOutputBytes),
	}
	if wantsEventStream(ctx) {
		f, result, err := s.sessions.StartSessionExec(ctx, req.SessionId, in)
		if err != nil {
			return nil, err
		}
		return sessionStream{ctx: ctx, f: f, sessionID: req.SessionId, result: result}, nil
	}
	out, err := s.sessions.SessionExec(ctx, req.SessionId, in)
	if err != nil {
		return nil, err
	}
	return SessionExec200JSONResponse(sessionExecResult(req.SessionId, out)), nil
}

// sessionStream is a session command's streamed answer, as /exec's: output
// events, then the exit event, which carries the session's state after it.
// It holds the process itself, as execStream does.
type sessionStream struct {
	ctx       context.Context
	f         service.Follower
	sessionID string
	result    func(context.Context) (service.SessionExecOutput, error)
}

// VisitSessionExecResponse writes the stream.
func (e sessionStream) VisitSessionExecResponse(w http.ResponseWriter) error {
	defer e.f.Close()
	err := streamEvents(e.ctx, w, e.f, 0, func() (any, error) {
		out, err := e.result(e.ctx)
		res := sessionExecResult(e.sessionID, out)
		res.Stdout, res.Stderr, res.StdoutBase64, res.StderrBase64 = nil, nil, nil, nil
		return res, err
	})
	if err != nil {
		// The client went away: the command is ended, and the session
		// keeps the state it had.
		e.f.Terminate()
	}
	return nil
}

// sessionExecResult is /exec's answer with the session's state after it.
func sessionExecResult(id string, out service.SessionExecOutput) SessionExecResult {
	r := execResult(out.ExecOutput)
	o := out.Session
	after := SessionAfter{
		SessionId: id, Cwd: o.Cwd, StateKept: o.StateKept,
		Variables: nameChanges(o.Changes.Variables),
		Functions: nameChanges(o.Changes.Functions),
		Aliases:   nameChanges(o.Changes.Aliases),
	}
	if o.Reason != "" {
		after.Reason = &o.Reason
	}
	return SessionExecResult{
		DurationMs: r.DurationMs, ExitCode: r.ExitCode, Pid: r.Pid, ProcessId: r.ProcessId, Signal: r.Signal,
		Sandbox: r.Sandbox, Snapshot: r.Snapshot, Status: r.Status,
		Stdout: r.Stdout, StdoutBase64: r.StdoutBase64, StdoutBytes: r.StdoutBytes, StdoutTruncated: r.StdoutTruncated,
		Stderr: r.Stderr, StderrBase64: r.StderrBase64, StderrBytes: r.StderrBytes, StderrTruncated: r.StderrTruncated,
		Session: after,
	}
}

func nameChanges(c shellsnap.NameChanges) NameChanges {
	return NameChanges{Added: orEmpty(c.Added), Changed: orEmpty(c.Changed), Removed: orEmpty(c.Removed)}
}

// orEmpty is s, or an empty list for nil: the contract's lists are never null.
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func sessionView(in session.Info) Session {
	out := Session{
		SessionId: in.ID, Shell: ShellInfo{Name: in.Shell.Name, Path: in.Shell.Path}, Cwd: in.Cwd, Busy: in.Busy, Standby: &in.Standby,
		CreatedAt: in.CreatedAt.UTC(), LastUsedAt: in.LastUsedAt.UTC(), Commands: in.Commands, StateBytes: in.StateBytes,
		Variables: orEmpty(in.Variables), Functions: orEmpty(in.Functions), Aliases: orEmpty(in.Aliases),
		History: make([]SessionCommand, len(in.History)), Sandbox: sandboxView(in.Sandbox),
	}
	if in.ForkedFrom != "" {
		out.ForkedFrom = &in.ForkedFrom
	}
	for i, c := range in.History {
		out.History[i] = SessionCommand{
			ProcessId: c.ProcessID, Script: c.Script, Status: ExitStatus(c.Status), ExitCode: c.ExitCode,
			StateKept: c.StateKept, StartedAt: c.StartedAt.UTC(), DurationMs: c.Duration.Milliseconds(),
		}
		if c.Signal != "" {
			out.History[i].Signal = &c.Signal
		}
	}
	return out
}
