package shellsnap

import "time"

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
	// OutcomePartial is used, with pieces of the state the shell could not
	// read back left out (Receipt.Unrestored names them).
	OutcomePartial  Outcome = "partial"
	OutcomeFallback Outcome = "fallback"
	// OutcomeNotRun means the request ended (its deadline, its client, the
	// server's shutdown) while its command waited for the capture: the
	// command never ran.
	OutcomeNotRun Outcome = "not_run"
)

// State is the snapshot's availability as a command found it
// (docs/design/snapshots.md#receipts).
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
	// restored the snapshot before the command came (package standby).
	Standby bool
	// Unrestored names what a partial replay left out.
	Unrestored []Piece
}

// Prepared is what Prepare answers for a launch: the receipt and, when its
// outcome is used or partial, the snapshot to replay (ReplayInput's
// Snapshot), which is shared with every launch that uses it: read it, never
// change it.
type Prepared struct {
	Receipt  Receipt
	Snapshot *Snapshot
}
