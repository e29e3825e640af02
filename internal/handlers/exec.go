package handlers

import (
	"context"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
)

// Exec runs a command to completion.
func (s *Server) Exec(ctx context.Context, req ExecRequestObject) (ExecResponseObject, error) {
	if s.draining.Load() {
		return nil, errShuttingDown
	}
	in, err := s.execInput(req.Body)
	if err != nil {
		return nil, err
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
	if b.Argv[0] == "" {
		return in, invalid("argv[0]", "the program name must not be empty")
	}
	if b.Cwd != nil {
		if !filepath.IsAbs(*b.Cwd) {
			return in, invalid("cwd", "cwd must be an absolute path")
		}
		in.Cwd = *b.Cwd
	}
	if b.Env != nil {
		if err := envpolicy.ValidateVars("env", *b.Env); err != nil {
			return in, err
		}
		in.Env = *b.Env
	}
	if in.EnvPolicy, err = policyFrom(b.EnvPolicy); err != nil {
		return in, err
	}
	if b.Stdin != nil {
		in.Stdin = []byte(*b.Stdin)
	}
	if b.TimeoutMs != nil {
		d := time.Duration(*b.TimeoutMs) * time.Millisecond
		if s.limits.MaxTimeout > 0 && (d > s.limits.MaxTimeout || *b.TimeoutMs > s.limits.MaxTimeout.Milliseconds()) {
			return in, invalidf("timeoutMs", "timeoutMs must be at most %d", s.limits.MaxTimeout.Milliseconds())
		}
		in.Timeout = d
	}
	return in, nil
}

func execResult(out service.ExecOutput) ExecResult {
	r := out.Result
	res := ExecResult{
		ProcessId:       out.ProcessID,
		Pid:             out.Pid,
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
	res.Stdout, res.StdoutBase64 = textOrBytes(r.Stdout)
	res.Stderr, res.StderrBase64 = textOrBytes(r.Stderr)
	return res
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
