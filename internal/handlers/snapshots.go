package handlers

import (
	"strings"

	"context"
	"time"

	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// ListSnapshots shows the whole cache.
func (s *Server) ListSnapshots(context.Context, ListSnapshotsRequestObject) (ListSnapshotsResponseObject, error) {
	return ListSnapshots200JSONResponse{Capacity: shellsnap.MaxCachedSnapshots, Entries: entries(s.snapshots.Snapshots())}, nil
}

// GetSnapshots shows one scope's entries.
func (s *Server) GetSnapshots(_ context.Context, req GetSnapshotsRequestObject) (GetSnapshotsResponseObject, error) {
	list, err := s.snapshots.ScopeSnapshots(req.ScopeId)
	if err != nil {
		return nil, err
	}
	return GetSnapshots200JSONResponse{Entries: entries(list)}, nil
}

// ForgetSnapshots drops one scope's entries.
func (s *Server) ForgetSnapshots(_ context.Context, req ForgetSnapshotsRequestObject) (ForgetSnapshotsResponseObject, error) {
	s.snapshots.ForgetSnapshots(req.ScopeId)
	return ForgetSnapshots204Response{}, nil
}

// PrewarmSnapshot captures a scope's snapshot ahead of need.
func (s *Server) PrewarmSnapshot(ctx context.Context, req PrewarmSnapshotRequestObject) (PrewarmSnapshotResponseObject, error) {
	b := req.Body
	in := service.PrewarmInput{
		ScopeID:   req.ScopeId,
		Shell:     shellsnap.Shell{Name: b.Shell.Name, Path: b.Shell.Path},
		Cwd:       b.Cwd,
		Env:       orZero(b.Env),
		EnvPolicy: policyFrom(b.EnvPolicy),
		Sandbox:   sandboxFrom(b.Sandbox),
		Terminal:  orZero(b.Terminal),
		Wait:      req.Params.Wait == nil || *req.Params.Wait,
	}
	info, err := s.snapshots.Prewarm(ctx, in)
	if err != nil {
		// The table names an exec's fields; a prewarm's are its body's.
		return nil, renameField(err, func(field string) string {
			return strings.TrimPrefix(field, "shellSnapshot.")
		})
	}
	if !in.Wait {
		return PrewarmSnapshot202JSONResponse(entry(info)), nil
	}
	return PrewarmSnapshot200JSONResponse(entry(info)), nil
}

func entries(list []shellsnap.EntryInfo) []SnapshotEntry {
	out := make([]SnapshotEntry, len(list))
	for i, e := range list {
		out[i] = entry(e)
	}
	return out
}

func entry(e shellsnap.EntryInfo) SnapshotEntry {
	out := SnapshotEntry{
		Key:           e.Key,
		ScopeId:       e.ScopeID,
		Shell:         ShellInfo{Name: e.Shell.Name, Path: e.Shell.Path},
		Cwd:           e.Cwd,
		Terminal:      e.Terminal,
		EnvPolicy:     policyView(e.Policy),
		Sandbox:       sandboxView(e.Sandbox),
		State:         SnapshotEntryState(e.State),
		Prewarmed:     e.Prewarmed,
		Attempts:      e.Attempts,
		MaxAttempts:   e.MaxAttempts,
		RetryAt:       optTime(e.RetryAt),
		CapturedAt:    optTime(e.CapturedAt),
		LastUsedAt:    optTime(e.LastUsedAt),
		StateBytes:    e.StateBytes,
		EnvNames:      e.EnvNames,
		EnvCount:      len(e.EnvNames),
		FunctionCount: e.FunctionCount,
		AliasCount:    e.AliasCount,
		OptionCount:   e.OptionCount,
		Unrestored:    pieces(e.Unrestored),
		Hits:          e.Hits,
		Waiting:       e.Waiting,
	}
	if out.EnvNames == nil {
		out.EnvNames = []string{}
	}
	if !e.CapturedAt.IsZero() {
		ms := float64(e.CaptureTime) / float64(time.Millisecond)
		out.CaptureMs = &ms
	}
	if e.LastError != nil {
		out.LastError = &SnapshotError{Reason: string(e.LastError.Reason), Message: e.LastError.Message}
	}
	return out
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
