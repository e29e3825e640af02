package shellsnap

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// Snapshot is a parsed capture: its state, restored from a file, and the
// environment the login shell ended with.
type Snapshot struct {
	// StateBytes is the size of the state: the capture's output from
	// "# Snapshot file" up to the NUL, its records bytes and all. The state
	// itself is not kept (up to 512 KiB each, a cache's memory): the restore
	// files hold what a replay restores.
	StateBytes int
	// Env is the captured environment after proxy stripping, the policy and the
	// removal of PWD, OLDPWD, SHLVL, _ and the never-inherited names.
	Env map[string]string
	// FunctionCount, AliasCount and OptionCount count the functions and
	// aliases the restore defines and the options it sets, on or off.
	FunctionCount, AliasCount, OptionCount int
	// Unrestored names the pieces of the state that the capture found the
	// shell cannot read back: a replay restores everything else.
	Unrestored []Piece

	// restore is the restore file (the restore directory for zsh) a replay
	// runs (restore.go).
	restore string
	// standby is the restore file of a standby shell (bashStandbyRender;
	// a zsh standby's is the replay's directory, zshStandby), and goAhead
	// the line its go-ahead runs before the command; standby is empty when
	// no standby can serve the snapshot.
	standby, goAhead string
	// interactive is set for a login terminal's snapshot, captured by an
	// interactive login shell (Launch.Terminal), which ReplayInteractive
	// alone replays; terminal is its rc file for bash (bashTerminalRC),
	// which sources restore and then sets readline's bindings.
	interactive bool
	terminal    string

	// definitions are the names a bash or zsh state defines
	// (bashDefinitions, zshDefinitions), which a standby reads; nil for sh.
	definitions *Definitions
	// zsh is set for a snapshot of zsh, whose standby's go-ahead is zsh's
	// (GoAhead).
	zsh bool
}

// parseCapture splits a capture's stdout into its state, its records and its
// environment, as the reference's parse_snapshot does
// (docs/design/snapshots.md#parse), and applies policy, if any, to the
// environment with inherit forced to all. The state is the records of
// nonce's capture (records.go), which may hold any bytes: it is restored from
// a file, never an environment string. The errors are *CaptureError with the
// reasons missing_environment and missing_state. Size limits are the
// capture's job.
func parseCapture(output []byte, policy *envpolicy.Policy, nonce string) (*Snapshot, []record, error) {
	nul := bytes.IndexByte(output, 0)
	if nul < 0 {
		return nil, nil, &CaptureError{Reason: ReasonMissingEnvironment, Message: "shell snapshot is missing its environment"}
	}
	// Profile noise before the marker may be any bytes but NUL; a NUL in it ends
	// the state early, which leaves no marker.
	begin := []byte(StateMarker + "\n" + nonce + " begin ")
	start := bytes.Index(output[:nul], begin)
	if start < 0 {
		return nil, nil, &CaptureError{Reason: ReasonMissingState, Message: "shell snapshot is missing its state marker"}
	}
	recs, ok := splitRecords(output[start+len(StateMarker)+1:nul], nonce)
	if !ok {
		return nil, nil, &CaptureError{Reason: ReasonMissingState, Message: "shell snapshot state is incomplete"}
	}
	return &Snapshot{StateBytes: nul - start, Env: parseEnv(output[nul+1:], policy)}, recs, nil
}

// parseEnv reads the exports env -0 printed: NAME=VALUE pieces split at the
// first "=", those that are not UTF-8 or have no "=" dropped, the last of a
// name winning; then the policy and the names a replay never takes from the
// capture.
func parseEnv(exports []byte, policy *envpolicy.Policy) map[string]string {
	env := make(map[string]string)
	for piece := range bytes.SplitSeq(exports, []byte{0}) {
		if len(piece) == 0 || !utf8.Valid(piece) {
			continue
		}
		name, value, ok := strings.Cut(string(piece), "=")
		if !ok {
			continue
		}
		env[name] = value
	}
	env = filterEnv(env, policy)
	// The reference keeps SHLVL and _ (env's own path). Both describe the capture
	// shell rather than the user's environment: a replayed SHLVL=1 would make the
	// replay shell report 2 where a real login shell reports 1.
	for _, name := range [...]string{"PWD", "OLDPWD", "SHLVL", "_"} {
		delete(env, name)
	}
	return env
}
