package service

import (
	"context"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// PrewarmInput asks for a scope's snapshot to be captured ahead of need.
type PrewarmInput struct {
	ScopeID string
	Shell   shellsnap.Shell
	// Cwd is the working directory, absolute; nil means the server's.
	Cwd       *string
	Env       map[string]string
	EnvPolicy *envpolicy.Policy
	// Sandbox confines the capture, as the commands that will use it; nil
	// means the server's default.
	Sandbox *sandbox.Policy
	// Terminal prewarms the snapshot a login terminal of the scope opens
	// from, captured by an interactive login shell, instead of the one its
	// commands use (docs/design/snapshots.md#login-terminals): bash and zsh.
	Terminal bool
	// Wait makes Prewarm return once the capture is done; otherwise it returns
	// at once with the entry as it is.
	Wait bool
}

// Prewarm captures the snapshot a command `shell -lc ...` with in's cwd, env
// and policy would use (docs/design/snapshots.md#cache-key), or with
// in.Terminal the one a login terminal `shell -l` would. An input that Validate
// refuses is its error, and a cwd that is not a directory
// exec.ErrCwdNotFound. A failure of this prewarm's own capture is returned
// as a *shellsnap.CaptureError and nothing is cached. After Shutdown began,
// or when it begins while the prewarm waits, it returns exec.ErrShuttingDown.
func (s *Service) Prewarm(ctx context.Context, in PrewarmInput) (shellsnap.EntryInfo, error) {
	if err := in.Validate(s.limits); err != nil {
		return shellsnap.EntryInfo{}, err
	}
	// The scope and the shell's name before its path: fish at a path that
	// does not exist is an unsupported shell.
	if err := (shellsnap.Request{ScopeID: in.ScopeID, Shell: in.Shell}).Check(); err != nil {
		return shellsnap.EntryInfo{}, err
	}
	if err := s.admit(); err != nil {
		return shellsnap.EntryInfo{}, err
	}
	// The capture would fail on it too, but as a capture failure (502): a
	// missing cwd is the request's fault.
	if err := exec.CheckDir(orZero(in.Cwd)); err != nil {
		return shellsnap.EntryInfo{}, err
	}
	// So is a shell that cannot start (a capture failure, 502, otherwise).
	if err := exec.CheckProgram(in.Shell.Path, orZero(in.Cwd), envpolicy.List(s.childEnv(in.Env, in.EnvPolicy))); err != nil {
		return shellsnap.EntryInfo{}, &ProgramError{Field: "shell.path", Err: err}
	}
	return s.prewarm(ctx, in)
}

// prewarm asks the cache for in's capture.
func (s *Service) prewarm(ctx context.Context, in PrewarmInput) (shellsnap.EntryInfo, error) {
	confine, err := s.sandbox(in.Sandbox)
	if err != nil {
		return shellsnap.EntryInfo{}, err
	}
	req := shellsnap.Request{ScopeID: in.ScopeID, Shell: in.Shell}
	l := shellsnap.Launch{
		Argv:     []string{in.Shell.Path, "-lc", "true"},
		Cwd:      orZero(in.Cwd),
		Env:      s.childEnv(in.Env, in.EnvPolicy),
		Policy:   in.EnvPolicy,
		Sandbox:  confine,
		Terminal: in.Terminal,
	}
	if in.Terminal {
		l.Argv = []string{in.Shell.Path, "-l"}
	}
	if !in.Wait {
		return s.snapshots.StartPrewarm(req, l)
	}
	ctx, cancel := s.waitContext(ctx, 0)
	defer cancel()
	ctx, end := s.snapshotSpan(ctx, req, shellsnap.Prewarm)
	r, err := s.snapshots.Prewarm(ctx, req, l)
	end(r, err)
	if err != nil {
		if s.ShuttingDown() {
			return shellsnap.EntryInfo{}, exec.ErrShuttingDown
		}
		return shellsnap.EntryInfo{}, err
	}
	info, ok := s.snapshots.Entry(req, l)
	if !ok {
		// Forgotten or evicted while it captured.
		return shellsnap.EntryInfo{}, ErrNotFound
	}
	return info, nil
}

// Snapshots returns the cache's entries, least recently used first.
func (s *Service) Snapshots() []shellsnap.EntryInfo { return s.snapshots.Entries() }

// ScopeSnapshots returns one scope's entries, or ErrNotFound when it has none.
func (s *Service) ScopeSnapshots(scopeID string) ([]shellsnap.EntryInfo, error) {
	entries := s.snapshots.Scope(scopeID)
	if len(entries) == 0 {
		return nil, ErrNotFound
	}
	return entries, nil
}

// ForgetSnapshots drops the scope's entries and ends its standby shells.
func (s *Service) ForgetSnapshots(scopeID string) {
	s.snapshots.Forget(scopeID)
	s.standbys.Prune()
}
