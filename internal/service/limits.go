package service

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
)

// Limits bounds what one request may ask for. A zero bound bounds nothing.
type Limits struct {
	// DefaultTimeout applies to a command (Exec, StartExec) that gives no
	// Timeout; zero means none. A background process (Start) has none.
	DefaultTimeout time.Duration
	// MaxTimeout is the largest Timeout (and IdleTimeout) a request may give.
	MaxTimeout time.Duration
	// MaxArgs and MaxArgBytes bound argv's length and total size.
	MaxArgs, MaxArgBytes int
	// MaxEnv and MaxEnvBytes bound the env map's length and total size (names
	// and values), envPolicy.set included, and MaxEnv the policy's patterns.
	MaxEnv, MaxEnvBytes int
	// MaxStdinBytes bounds stdin in a request, and one stdin write.
	MaxStdinBytes int
	// MaxOutputBytes bounds MaxOutputBytes.
	MaxOutputBytes int
	// StdinWriteBound is how long one stdin write of a request may wait for
	// the child to read, so that a child that never reads does not hold the
	// request forever; zero means 30 s. An attachment's writes wait as a
	// keyboard's do, until the connection ends (Attachment.WriteStdin).
	StdinWriteBound time.Duration
}

// FieldError is a request field the service refuses: what the API's contract
// cannot say (limits, NUL bytes, a relative cwd). It never quotes a value.
type FieldError struct {
	// Field names the field as the API does: argv[0], cwd, envPolicy.set.
	Field string
	// Reason says what is wrong with it, for the client.
	Reason string
}

// Error returns the reason.
func (e *FieldError) Error() string { return e.Reason }

func fieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate reports the first field of in that l refuses or that no process
// could be given, in the order of the request's fields: a *FieldError, or an
// *envpolicy.FieldError for a malformed env or envPolicy. The snapshot
// request is the cache's to check (shellsnap.ErrInvalidScope,
// shellsnap.ErrUnsupportedShell).
func (in ExecInput) Validate(l Limits) error {
	if err := l.checkArgv(in.Argv); err != nil {
		return err
	}
	if err := l.checkLaunch(in.Cwd, in.Env, in.EnvPolicy); err != nil {
		return err
	}
	if err := l.checkStdin("stdin", len(in.Stdin)); err != nil {
		return err
	}
	if err := l.checkTimeout("idleTimeoutMs", in.IdleTimeout); err != nil {
		return err
	}
	if l.MaxOutputBytes > 0 && in.MaxOutputBytes > l.MaxOutputBytes {
		return fieldErrorf("maxOutputBytes", "maxOutputBytes must be at most %d", l.MaxOutputBytes)
	}
	if err := checkTTY("tty", in.TTY); err != nil {
		return err
	}
	if strings.IndexByte(in.Arg0, 0) >= 0 {
		return &FieldError{Field: "arg0", Reason: "arg0 contains a NUL byte, which no program can receive"}
	}
	return l.checkTimeout("timeoutMs", in.Timeout)
}

// MaxTTYCells bounds a terminal's columns and its rows.
const MaxTTYCells = 1000

// checkTTY refuses a terminal size outside 1..MaxTTYCells; nil is none.
func checkTTY(field string, size *exec.TTYSize) error {
	if size == nil {
		return nil
	}
	if size.Cols < 1 || size.Cols > MaxTTYCells || size.Rows < 1 || size.Rows > MaxTTYCells {
		return fieldErrorf(field, "%s.cols and %s.rows must be 1 to %d", field, field, MaxTTYCells)
	}
	return nil
}

// Validate reports the first field of in that l refuses, as ExecInput's
// Validate does.
func (in PrewarmInput) Validate(l Limits) error {
	if in.Terminal && in.Shell.Name == "sh" {
		return &FieldError{Field: "terminal", Reason: "sh has no login terminal snapshot: a login terminal's snapshot is bash's or zsh's"}
	}
	return l.checkLaunch(in.Cwd, in.Env, in.EnvPolicy)
}

// Validate reports a write larger than l allows.
func (in StdinInput) Validate(l Limits) error {
	return l.checkStdin("data", len(in.Data))
}

// maxArgLen is the longest argument or environment string ("NAME=value")
// Linux passes to a program: MAX_ARG_STRLEN, 32 pages of 4 KiB, its NUL
// included. execve refuses a longer one (E2BIG), which would read as a
// program that cannot start.
const maxArgLen = 128<<10 - 1

// checkArgv refuses an argv that names no program, is beyond the limits,
// has an argument longer than Linux passes, or holds a NUL byte.
func (l Limits) checkArgv(argv []string) error {
	switch {
	case len(argv) == 0:
		return &FieldError{Field: "argv", Reason: "argv must not be empty"}
	case argv[0] == "":
		return &FieldError{Field: "argv[0]", Reason: "the program name must not be empty"}
	case l.MaxArgs > 0 && len(argv) > l.MaxArgs:
		return fieldErrorf("argv", "argv has %d elements; the limit is %d", len(argv), l.MaxArgs)
	}
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	if l.MaxArgBytes > 0 && n > l.MaxArgBytes {
		return fieldErrorf("argv", "argv is %d bytes; the limit is %d", n, l.MaxArgBytes)
	}
	for i, a := range argv {
		if len(a) > maxArgLen {
			return fieldErrorf(fmt.Sprintf("argv[%d]", i), "argv[%d] is %d bytes; Linux passes at most %d in one argument", i, len(a), maxArgLen)
		}
		if strings.IndexByte(a, 0) >= 0 {
			return fieldErrorf(fmt.Sprintf("argv[%d]", i), "argv[%d] contains a NUL byte, which no program can receive", i)
		}
	}
	return nil
}

// checkLaunch checks what a command and a prewarm share: the cwd's shape (not
// whether it exists: exec.CheckDir), the env and the policy.
func (l Limits) checkLaunch(cwd *string, env map[string]string, policy *envpolicy.Policy) error {
	if cwd != nil {
		if strings.IndexByte(*cwd, 0) >= 0 {
			return &FieldError{Field: "cwd", Reason: "cwd contains a NUL byte"}
		}
		if !filepath.IsAbs(*cwd) {
			return &FieldError{Field: "cwd", Reason: "cwd must be an absolute path"}
		}
	}
	if err := envpolicy.ValidateVars("env", env); err != nil {
		return err
	}
	if err := l.checkEnv("env", env); err != nil {
		return err
	}
	if policy == nil {
		return nil
	}
	if err := policy.Validate(); err != nil {
		return err
	}
	if err := l.checkEnv("envPolicy.set", policy.Set); err != nil {
		return err
	}
	if n := len(policy.Exclude) + len(policy.IncludeOnly); l.MaxEnv > 0 && n > l.MaxEnv {
		return fieldErrorf("envPolicy", "envPolicy has %d patterns; the limit is %d", n, l.MaxEnv)
	}
	return nil
}

// checkEnv enforces the env limits on one map.
func (l Limits) checkEnv(field string, env map[string]string) error {
	if l.MaxEnv > 0 && len(env) > l.MaxEnv {
		return fieldErrorf(field, "%s has %d variables; the limit is %d", field, len(env), l.MaxEnv)
	}
	n := 0
	for k, v := range env {
		if len(k)+1+len(v) > maxArgLen {
			return fieldErrorf(field, "%s has a variable of %d bytes (NAME=value); Linux passes at most %d in one", field, len(k)+1+len(v), maxArgLen)
		}
		n += len(k) + len(v) + 2
	}
	if l.MaxEnvBytes > 0 && n > l.MaxEnvBytes {
		return fieldErrorf(field, "%s is %d bytes; the limit is %d", field, n, l.MaxEnvBytes)
	}
	return nil
}

// checkStdin enforces the stdin limit.
func (l Limits) checkStdin(field string, n int) error {
	if l.MaxStdinBytes > 0 && n > l.MaxStdinBytes {
		return fieldErrorf(field, "%s is %d bytes; the limit is %d", field, n, l.MaxStdinBytes)
	}
	return nil
}

// checkTimeout enforces the largest timeout.
func (l Limits) checkTimeout(field string, d time.Duration) error {
	if l.MaxTimeout > 0 && d > l.MaxTimeout {
		return fieldErrorf(field, "%s must be at most %d", field, l.MaxTimeout.Milliseconds())
	}
	return nil
}
