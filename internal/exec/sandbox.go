package exec

import (
	"errors"
	"fmt"
	"os/exec"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// errNoSandbox names what a manager without a Sandbox lacks.
const errNoSandbox = "a sandbox: this process manager was built without one"

// CheckSandbox reports whether the manager can start a process confined by
// p, as Start would find before it spawns anything: a *sandbox.FieldError for
// a malformed policy or a writable root that is not a directory, a
// *sandbox.UnavailableError for one the kernel or the manager cannot
// enforce. For a caller that must refuse a policy before it runs anything
// else for the command (a snapshot capture). A request's policy it also
// refuses when a writable root reaches the server's private directories
// (sandbox.Sandbox.Admit); a spawn's own check does not, since a session's
// command gets its own directory there as a root.
func (m *Manager) CheckSandbox(p sandbox.Policy) error {
	if m.opts.Sandbox == nil {
		return checkSandbox(nil, p)
	}
	return m.opts.Sandbox.Admit(p)
}

// checkSandbox refuses a policy that sb cannot enforce, as Sandbox.Check
// does: a *sandbox.FieldError or a *sandbox.UnavailableError. The zero policy
// needs no sandbox at all.
func checkSandbox(sb *sandbox.Sandbox, p sandbox.Policy) error {
	if sb == nil {
		if err := p.Validate(); err != nil {
			return err
		}
		if !p.IsZero() {
			return &sandbox.UnavailableError{Missing: []string{errNoSandbox}}
		}
		return nil
	}
	return sb.Check(p)
}

// startConfined starts cmd confined by p and reports how; pts is the devpts
// its terminal was opened from (sandbox.Sandbox.Devpts), nil for none. The zero policy
// starts it as it is (startCmd, with the signal mask rule of signals.go); any
// other is sb's to start, from a thread of its own whose mask it empties, so
// that the child starts clean either way.
func startConfined(cmd *exec.Cmd, sb *sandbox.Sandbox, p sandbox.Policy, pts *sandbox.Devpts, masked bool) (sandbox.Report, error) {
	if p.IsZero() {
		return sandbox.Report{Type: sandbox.TypeNone}, startCmd(cmd, masked)
	}
	if sb == nil {
		return sandbox.Report{}, &sandbox.UnavailableError{Missing: []string{errNoSandbox}}
	}
	return sb.Start(p, cmd, pts)
}

// spawnError is what a failed start returns: the sandbox's refusals as they
// are, for the caller to tell apart, anything else as ErrSpawn.
func spawnError(err error) error {
	var fe *sandbox.FieldError
	if errors.As(err, &fe) || errors.Is(err, sandbox.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrSpawn, err)
}
