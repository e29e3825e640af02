package shellsnap

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// Snapshot is a parsed capture: the state text to replay and the environment the
// login shell ended with.
type Snapshot struct {
	// State is the restorable script, from "# Snapshot file" up to the NUL.
	State string
	// Env is the captured environment after proxy stripping, the policy and the
	// removal of PWD, OLDPWD, SHLVL, _ and the never-inherited names.
	Env map[string]string
	// Captured holds every name that the capture shell exported, before any of
	// that filtering. Replay uses it to tell a variable that the profile unset
	// from one that Parse filtered out; nil means unknown, and Replay then unsets
	// nothing.
	Captured map[string]bool
	// FunctionCount, AliasCount and OptionCount count the definitions of the
	// state's "# Functions", "# aliases N" and "# setopts N" (plus bash's
	// "# shopts N") sections.
	FunctionCount, AliasCount, OptionCount int
	// Unrestored names the pieces of the state that the capture found the
	// shell cannot read back: a replay restores everything else.
	Unrestored []Piece

	// restore is the restore file a replay runs (restore.go); empty for a
	// shell whose state travels in the environment.
	restore string
	// standby is the restore file of a standby shell (bashStandbyRender),
	// and goAhead the line its go-ahead runs before the command; standby is
	// empty when no standby can serve the snapshot.
	standby, goAhead string
	// terminal is a bash snapshot's rc file of a login terminal
	// (bashTerminalRC), which sources restore.
	terminal string

	snapshotNames // read on demand by StandbyScript
}

// RestoreFile reports whether a replay of s restores it from a restore
// file (every bash snapshot), rather than from the environment.
func (s *Snapshot) RestoreFile() bool { return s.restore != "" }

// Parse splits a capture's stdout into its state and its environment, as the
// reference's parse_snapshot does (SHELL-SNAPSHOTS.md section 5), and applies
// policy, if any, to the environment with inherit forced to all. The errors are
// *CaptureError with the reasons missing_environment, missing_state and
// invalid_utf8. Size limits are the capture's job.
func Parse(output []byte, policy *envpolicy.Policy) (*Snapshot, error) {
	nul := bytes.IndexByte(output, 0)
	if nul < 0 {
		return nil, &CaptureError{Reason: ReasonMissingEnvironment, Message: "shell snapshot is missing its environment"}
	}
	// Profile noise before the marker may be any bytes but NUL; a NUL in it ends
	// the state early, which leaves no marker.
	start := bytes.Index(output[:nul], []byte(StateMarker))
	if start < 0 {
		return nil, &CaptureError{Reason: ReasonMissingState, Message: "shell snapshot is missing its state marker"}
	}
	state := output[start:nul]
	if !utf8.Valid(state) {
		return nil, &CaptureError{Reason: ReasonInvalidUTF8, Message: "shell snapshot state is not UTF-8: " + utf8ErrorDetail(state)}
	}

	env := make(map[string]string)
	captured := make(map[string]bool)
	for piece := range bytes.SplitSeq(output[nul+1:], []byte{0}) {
		if len(piece) == 0 || !utf8.Valid(piece) {
			continue
		}
		name, value, ok := strings.Cut(string(piece), "=")
		if !ok {
			continue
		}
		env[name] = value
		captured[name] = true
	}
	env = filterEnv(env, policy)
	// The reference keeps SHLVL and _ (env's own path). Both describe the capture
	// shell rather than the user's environment: a replayed SHLVL=1 would make the
	// replay shell report 2 where a real login shell reports 1.
	for _, name := range [...]string{"PWD", "OLDPWD", "SHLVL", "_"} {
		delete(env, name)
	}

	s := &Snapshot{State: string(state), Env: env, Captured: captured}
	s.FunctionCount, s.AliasCount, s.OptionCount = countState(s.State)
	return s, nil
}

// countState counts the function definitions of the state's "# Functions"
// section and adds up the N of its "# aliases N" and "# setopts N" / "# shopts N"
// headers. A definition is a line at the start of a line that bash's declare -f
// prints as "name () " followed by "{ ", and zsh's functions as "name () {".
// Heredoc text that happens to look like a definition is counted too; the counts
// are informational.
func countState(state string) (functions, aliases, options int) {
	inFunctions := false
	lines := strings.Split(state, "\n")
	for i, line := range lines {
		if n, ok := sectionCount(line, "# aliases "); ok {
			aliases += n
			inFunctions = false
			continue
		}
		if n, ok := sectionCount(line, "# setopts "); ok {
			options += n
			inFunctions = false
			continue
		}
		if n, ok := sectionCount(line, "# shopts "); ok {
			options += n
			inFunctions = false
			continue
		}
		if line == "# Functions" {
			inFunctions = true
			continue
		}
		if !inFunctions || line == "" || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		switch {
		case strings.HasSuffix(line, " () {"):
			functions++
		case strings.HasSuffix(line, " () ") && i+1 < len(lines) && lines[i+1] == "{ ":
			functions++
		}
	}
	return functions, aliases, options
}

// sectionCount parses a "# <kind> N" header line.
func sectionCount(line, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	// A header counts lines of a state of at most MaxSnapshotBytes: a larger
	// N is text that only looks like a header (a heredoc, say), and adding it
	// up could overflow.
	if err != nil || n < 0 || n > MaxSnapshotBytes {
		return 0, false
	}
	return n, true
}

// utf8ErrorDetail describes the first invalid UTF-8 sequence of b the way Rust's
// Utf8Error displays it, which the reference's message carries: "invalid utf-8
// sequence of N bytes from index I", or "incomplete utf-8 byte sequence from
// index I" when b ends inside a sequence.
func utf8ErrorDetail(b []byte) string {
	valid := 0
	for valid < len(b) {
		r, size := utf8.DecodeRune(b[valid:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		valid += size
	}
	n, incomplete := invalidSequenceLength(b[valid:])
	if incomplete {
		return fmt.Sprintf("incomplete utf-8 byte sequence from index %d", valid)
	}
	return fmt.Sprintf("invalid utf-8 sequence of %d bytes from index %d", n, valid)
}

// invalidSequenceLength returns how many bytes of b, which starts with an
// invalid sequence, Rust's validator reports as invalid (its error_len: the
// longest prefix that could still have begun a valid sequence), or incomplete
// when b ends before the sequence is decided.
func invalidSequenceLength(b []byte) (n int, incomplete bool) {
	if len(b) == 0 {
		return 0, true
	}
	width, lo, hi := 0, byte(0x80), byte(0xBF)
	switch first := b[0]; {
	case first >= 0xC2 && first <= 0xDF:
		width = 2
	case first == 0xE0:
		width, lo = 3, 0xA0
	case first == 0xED:
		width, hi = 3, 0x9F
	case first >= 0xE1 && first <= 0xEF:
		width = 3
	case first == 0xF0:
		width, lo = 4, 0x90
	case first == 0xF4:
		width, hi = 4, 0x8F
	case first >= 0xF1 && first <= 0xF3:
		width = 4
	default:
		return 1, false
	}
	for k := 1; k < width; k++ {
		if k >= len(b) {
			return 0, true
		}
		c := b[k]
		if k == 1 && (c < lo || c > hi) || k > 1 && (c < 0x80 || c > 0xBF) {
			return k, false
		}
	}
	return width, false
}
