package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Exec runs a command to completion.
func (s *Server) Exec(ctx context.Context, req ExecRequestObject) (ExecResponseObject, error) {
	in, err := s.execInput(req.Body)
	if err != nil {
		return nil, err
	}
	// argv may carry secrets on a command line: debug level only.
	zerolog.Ctx(ctx).Debug().Strs("argv", in.Argv).Msg("exec")
	if wantsEventStream(ctx) {
		p, err := s.procs.Start(ctx, service.StartInput{ExecInput: in})
		var nr *service.NotRunError
		if errors.As(err, &nr) {
			return execNotRun(execResult(nr.Output())), nil
		}
		if err != nil {
			return nil, err
		}
		return execStream{ctx: ctx, p: p}, nil
	}
	out, err := s.exec.Exec(ctx, in)
	if err != nil {
		return nil, err
	}
	return Exec200JSONResponse(execResult(out)), nil
}

// execInput checks what the contract cannot say and translates the body.
func (s *Server) execInput(b *ExecRequest) (in service.ExecInput, err error) {
	in = service.ExecInput{Argv: b.Argv, Timeout: s.limits.DefaultTimeout}
	if b.ProcessId != nil {
		in.ProcessID = *b.ProcessId
	}
	if b.Argv[0] == "" {
		return in, invalid("argv[0]", "the program name must not be empty")
	}
	if err := s.limits.checkArgv(b.Argv); err != nil {
		return in, err
	}
	for i, a := range b.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return in, invalidf(fmt.Sprintf("argv[%d]", i), "argv[%d] contains a NUL byte, which no program can receive", i)
		}
	}
	if b.Cwd != nil {
		if err := checkCwd(*b.Cwd); err != nil {
			return in, err
		}
		in.Cwd = *b.Cwd
	}
	if b.Env != nil {
		if err := envpolicy.ValidateVars("env", *b.Env); err != nil {
			return in, err
		}
		if err := s.limits.checkEnv("env", *b.Env); err != nil {
			return in, err
		}
		in.Env = *b.Env
	}
	if in.EnvPolicy, err = s.policy(b.EnvPolicy); err != nil {
		return in, err
	}
	if b.ShellSnapshot != nil {
		in.Snapshot = &shellsnap.Request{
			ScopeID: b.ShellSnapshot.ScopeId,
			Shell:   shellsnap.Shell{Name: b.ShellSnapshot.Shell.Name, Path: b.ShellSnapshot.Shell.Path},
		}
	}
	if b.Stdin != nil {
		if err := s.limits.checkStdin("stdin", len(*b.Stdin)); err != nil {
			return in, err
		}
		in.Stdin = []byte(*b.Stdin)
	}
	if b.IdleTimeoutMs != nil {
		if in.IdleTimeout, err = s.duration("idleTimeoutMs", *b.IdleTimeoutMs); err != nil {
			return in, err
		}
	}
	if b.MaxOutputBytes != nil {
		if s.limits.MaxOutputBytes > 0 && *b.MaxOutputBytes > s.limits.MaxOutputBytes {
			return in, invalidf("maxOutputBytes", "maxOutputBytes must be at most %d", s.limits.MaxOutputBytes)
		}
		in.MaxOutputBytes = *b.MaxOutputBytes
		if in.MaxOutputBytes == 0 {
			in.MaxOutputBytes = exec.KeepNoOutput // the domain's zero is the server's default, as an absent field is
		}
	}
	if b.TimeoutMs != nil {
		if in.Timeout, err = s.duration("timeoutMs", *b.TimeoutMs); err != nil {
			return in, err
		}
	}
	return in, nil
}

func checkCwd(cwd string) error {
	if strings.IndexByte(cwd, 0) >= 0 {
		return invalid("cwd", "cwd contains a NUL byte")
	}
	if !filepath.IsAbs(cwd) {
		return invalid("cwd", "cwd must be an absolute path")
	}
	return nil
}

// duration checks a millisecond limit against the server's maximum.
func (s *Server) duration(field string, ms int64) (time.Duration, error) {
	if s.limits.MaxTimeout > 0 && ms > s.limits.MaxTimeout.Milliseconds() {
		return 0, invalidf(field, "%s must be at most %d", field, s.limits.MaxTimeout.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
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
	return out
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
