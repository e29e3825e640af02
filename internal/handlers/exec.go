package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Exec runs a command to completion, or streams it to a client that asks
// for events.
func (s *Server) Exec(ctx context.Context, req ExecRequestObject) (ExecResponseObject, error) {
	in := execInput(req.Body)
	// argv may carry secrets on a command line: debug level only.
	zerolog.Ctx(ctx).Debug().Strs("argv", in.Argv).Msg("exec")
	if wantsEventStream(ctx) {
		return s.execEvents(ctx, in)
	}
	out, err := s.exec.Exec(ctx, in)
	if err != nil {
		return nil, err
	}
	return Exec200JSONResponse(execResult(out)), nil
}

// execInput translates an /exec body; the service validates it.
func execInput(b *ExecRequest) service.ExecInput {
	return service.ExecInput{
		ProcessID:      orZero(b.ProcessId),
		Argv:           b.Argv,
		Cwd:            b.Cwd,
		Env:            orZero(b.Env),
		EnvPolicy:      policyFrom(b.EnvPolicy),
		Snapshot:       snapshotRequest(b.ShellSnapshot),
		Sandbox:        sandboxFrom(b.Sandbox),
		Stdin:          stdinBytes(b.Stdin),
		Timeout:        millis(b.TimeoutMs),
		IdleTimeout:    millis(b.IdleTimeoutMs),
		MaxOutputBytes: maxOutputBytes(b.MaxOutputBytes),
		TTY:            ttySize(b.Tty),
		Arg0:           orZero(b.Arg0),
	}
}

// ttySize translates a terminal size; nil is none. A value beyond uint16
// saturates, so that the service's bound refuses it rather than a wrapped one
// passing (the contract refuses it first).
func ttySize(t *TTYSize) *exec.TTYSize {
	if t == nil {
		return nil
	}
	cell := func(n int) uint16 { return uint16(min(max(n, 0), math.MaxUint16)) }
	return &exec.TTYSize{Cols: cell(t.Cols), Rows: cell(t.Rows)}
}

func snapshotRequest(r *ShellSnapshotRequest) *shellsnap.Request {
	if r == nil {
		return nil
	}
	return &shellsnap.Request{ScopeID: r.ScopeId, Shell: shellsnap.Shell{Name: r.Shell.Name, Path: r.Shell.Path}}
}

func stdinBytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// millis is a millisecond field as a duration, zero when absent. One too
// large for a duration saturates, so that the service's maximum refuses it
// rather than a wrapped, negative one passing.
func millis(ms *int64) time.Duration {
	switch {
	case ms == nil:
		return 0
	case *ms > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(*ms) * time.Millisecond
}

// maxOutputBytes translates maxOutputBytes: an explicit 0 keeps no output,
// which the domain spells KeepNoOutput since its zero is the server's
// default, as an absent field is.
func maxOutputBytes(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return exec.KeepNoOutput
	}
	return *n
}

func execResult(out service.ExecOutput) ExecResult {
	r := out.Result
	res := ExecResult{
		Status:          ExitStatus(r.Status),
		ExitCode:        r.ExitCode,
		DurationMs:      r.Duration.Milliseconds(),
		StdoutBytes:     r.Stdout.Total,
		StderrBytes:     r.Stderr.Total,
		StdoutTruncated: r.Stdout.Truncated,
		StderrTruncated: r.Stderr.Truncated,
	}
	if r.Signal != "" {
		res.Signal = &r.Signal
	}
	if out.ProcessID != "" { // empty: the command never ran
		res.ProcessId, res.Pid = &out.ProcessID, &out.Pid
		report := sandboxReport(out.Sandbox)
		res.Sandbox = &report
	}
	res.Snapshot = receipt(out.Snapshot)
	res.Stdout, res.StdoutBase64 = textOrBytes(r.Stdout)
	res.Stderr, res.StderrBase64 = textOrBytes(r.Stderr)
	return res
}

// execNotRun is a streamed /exec whose command never ran: the exit event is
// the whole stream.
type execNotRun ExecResult

// VisitExecResponse writes the stream.
func (e execNotRun) VisitExecResponse(w http.ResponseWriter) error {
	data, err := json.Marshal(ExecResult(e))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, err = fmt.Fprintf(w, "event: exit\ndata: %s\n\n", data)
	return err
}

func receipt(r shellsnap.Receipt) SnapshotReceipt {
	out := SnapshotReceipt{
		Outcome: SnapshotReceiptOutcome(r.Outcome),
		WaitMs:  float64(r.Wait) / float64(time.Millisecond),
		Standby: r.Standby,
	}
	if r.State != "" {
		state := SnapshotReceiptState(r.State)
		out.State = &state
	}
	if r.Reason != "" {
		out.Reason = &r.Reason
	}
	out.Unrestored = pieces(r.Unrestored)
	return out
}

// pieces maps the pieces a replay leaves out; nil when there are none.
func pieces(list []shellsnap.Piece) *[]UnrestoredPiece {
	if len(list) == 0 {
		return nil
	}
	out := make([]UnrestoredPiece, len(list))
	for i, p := range list {
		out[i] = UnrestoredPiece{Kind: UnrestoredPieceKind(p.Kind), Name: p.Name}
	}
	return &out
}

// textOrBytes returns the output as text when it is UTF-8, else as bytes that
// the JSON encoder writes as base64.
func textOrBytes(o exec.Output) (*string, *[]byte) {
	if utf8.Valid(o.Data) {
		s := string(o.Data)
		return &s, nil
	}
	b := o.Data
	return nil, &b
}
