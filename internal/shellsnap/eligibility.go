package shellsnap

import (
	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/sandbox"
)

// Shell names the login shell a snapshot is taken of.
type Shell struct {
	Name string // bash, zsh or sh
	Path string // the exact argv[0] of the commands that may use the snapshot
}

// Request asks for a command to use the scope's snapshot.
type Request struct {
	ScopeID string
	Shell   Shell
}

// Launch is a command that asks for a snapshot, as its caller will start it
// unless a snapshot is replayed into it.
type Launch struct {
	// Argv is the command to run; a snapshot applies when it is
	// [Shell.Path, "-lc", script, extra...], or for a Terminal a login
	// terminal (LoginTerminal: [Shell.Path, "-l"], "-il", ...).
	Argv []string
	Cwd  string
	// Env is the child's environment (policy result with the request's env laid
	// over it); the capture runs with exactly this environment.
	Env map[string]string
	// Policy is the request's env policy, re-applied to captured exports.
	Policy *envpolicy.Policy
	// Sandbox confines the command, and so its capture: a login profile
	// writes and reaches no more than the command may.
	Sandbox sandbox.Policy
	// Terminal asks for the snapshot of a login terminal: an interactive
	// login shell's state (docs/design/snapshots.md#login-terminals),
	// captured by one, under a key of its own, which only ReplayInteractive
	// replays. A command's snapshot is a non-interactive login shell's.
	Terminal bool
}

// Check refuses a request whose scope is empty or too long
// (ErrInvalidScope), then one whose shell is not bash, zsh or sh
// (ErrUnsupportedShell): the request's own faults, before any launch.
func (req Request) Check() error {
	if req.ScopeID == "" || len(req.ScopeID) > MaxScopeBytes {
		return ErrInvalidScope
	}
	if !supportedShell(req.Shell.Name) {
		return ErrUnsupportedShell
	}
	return nil
}

// check runs the checks of docs/design/snapshots.md#eligibility-and-check-order:
// the scope, then the shell name, then the argv shape. The reference checks
// the shape before the name, so that `fish` with another argv falls back
// silently; here an unsupported shell is refused whatever the argv, since a
// client that names one has a bug that a silent fallback would hide. A
// non-empty receipt outcome means the request goes no further.
func check(req *Request, l Launch) (Receipt, error) {
	if req == nil {
		return Receipt{Outcome: OutcomeNotRequested}, nil
	}
	if err := req.Check(); err != nil {
		return Receipt{}, err
	}
	if l.Terminal {
		if !LoginTerminal(req.Shell, l.Argv) {
			return Receipt{Outcome: OutcomeIneligible, Reason: "argv is not a login terminal of shell.path ([shell.path, \"-l\"] or \"-il\"), or the shell is sh"}, nil
		}
	} else if ok, why := eligible(*req, l.Argv); !ok {
		return Receipt{Outcome: OutcomeIneligible, Reason: why}, nil
	}
	if _, posix := l.Env["POSIXLY_CORRECT"]; posix && req.Shell.Name == "bash" {
		// bash starts in posix mode: its login shell reads no profile and
		// runs no BASH_ENV, which would then reach the script's children.
		return Receipt{Outcome: OutcomeIneligible, Reason: "POSIXLY_CORRECT is in the environment: bash starts in posix mode, whose login shell reads no profile"}, nil
	}
	return Receipt{}, nil
}

// eligible reports whether argv has the shape a snapshot can replace
// (docs/design/snapshots.md#eligibility-and-check-order), and why not.
func eligible(req Request, argv []string) (bool, string) {
	switch {
	case len(argv) < 3:
		return false, "argv must be [shell.path, \"-lc\", script, ...]"
	case argv[0] != req.Shell.Path:
		return false, "argv[0] is not shell.path"
	case argv[1] != "-lc":
		return false, "argv[1] is not -lc"
	}
	return true, ""
}

func supportedShell(name string) bool {
	return name == "bash" || name == "zsh" || name == "sh"
}
