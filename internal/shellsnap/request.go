package shellsnap

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
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

// Command is a command being prepared: Prepare may rewrite Argv and Env.
type Command struct {
	// Argv is the command to run; a snapshot applies when it is
	// [Shell.Path, "-lc", script, extra...].
	Argv []string
	Cwd  string
	// Env is the child's environment (policy result with the request's env laid
	// over it); the capture runs with exactly this environment.
	Env map[string]string
	// RequestEnv is the request's own env, which wins over snapshot values.
	RequestEnv map[string]string
	// Policy is the request's env policy, re-applied to captured exports.
	Policy *envpolicy.Policy
	// Replayed is set by Prepare when it replayed a snapshot into the
	// command: the replay's input, from which Standby builds a standby shell
	// that serves the same launch.
	Replayed *ReplayInput
}

// Purpose says why a snapshot is wanted.
type Purpose int

// The purposes of a prepare.
const (
	// Execution prepares a command: a capture failure never fails it.
	Execution Purpose = iota
	// Prewarm captures ahead of need: its own failure is returned, not cached.
	Prewarm
)

// String names the purpose as the reference's telemetry does.
func (p Purpose) String() string {
	if p == Prewarm {
		return "prewarm"
	}
	return "execution"
}

// Outcome is what a prepare did to a command.
type Outcome string

// The outcomes of a prepare.
const (
	OutcomeNotRequested Outcome = "not_requested"
	OutcomeIneligible   Outcome = "ineligible"
	OutcomeUsed         Outcome = "used"
	OutcomeFallback     Outcome = "fallback"
	// OutcomeNotRun means the request ended (its deadline, its client, the
	// server's shutdown) while its command waited for the capture: the
	// command never ran.
	OutcomeNotRun Outcome = "not_run"
)

// State is the snapshot's availability as a command found it (SHELL-SNAPSHOTS.md 8.2).
type State string

// The availability states.
const (
	StateCacheHit       State = "cache_hit"
	StatePrewarmReady   State = "prewarm_ready"
	StateCapturePending State = "capture_pending"
	StatePrewarmPending State = "prewarm_pending"
	StateOnDemand       State = "on_demand"
	StateUnavailable    State = "unavailable"
)

// Receipt tells a client what happened to its snapshot request.
type Receipt struct {
	Outcome Outcome
	State   State // empty when not requested or ineligible
	Wait    time.Duration
	// Reason says why on fallback or ineligible.
	Reason string
	// Standby is set when the command ran in a standby shell, which had
	// restored the snapshot before the command came (Standby).
	Standby bool
}

// Errors a request can get; everything else falls back silently.
var (
	// ErrInvalidScope means the scope id is empty or longer than MaxScopeBytes.
	ErrInvalidScope = fmt.Errorf("shell snapshot scope must be non-empty and at most %d bytes", MaxScopeBytes)
	// ErrUnsupportedShell means the shell name is not bash, zsh or sh.
	ErrUnsupportedShell = errors.New("shell snapshots are unsupported for this shell")
	// ErrWaitEnded means the request's context ended while its command waited
	// for the capture, which goes on: the command must not run. It comes
	// wrapped with the context's cause.
	ErrWaitEnded = errors.New("the request ended while its command waited for the shell snapshot capture")
)

// key identifies a cache entry: the whole request, the cwd and the policy
// (SHELL-SNAPSHOTS.md 3.1). The env is deliberately not part of it.
type key struct {
	scopeID   string
	shellName string
	shellPath string
	cwd       string
	policy    string // canonical JSON of the policy; empty for none
}

func keyOf(req Request, cwd string, policy *envpolicy.Policy) key {
	k := key{scopeID: req.ScopeID, shellName: req.Shell.Name, shellPath: req.Shell.Path, cwd: cwd}
	if policy != nil {
		// json.Marshal sorts map keys, and keeps the ordered lists in order,
		// which is the reference's structural equality.
		b, _ := json.Marshal(policy)
		k.policy = string(b)
	}
	return k
}

// eligible reports whether argv has the shape a snapshot can replace
// (SHELL-SNAPSHOTS.md 2, step 3), and why not.
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
