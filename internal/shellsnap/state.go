package shellsnap

// What a standby shell (package standby) reads of a snapshot: the names its
// state defines, its standby restore file and go-ahead line.

// StandbyReady reports whether a standby shell can serve s: its state is
// restored from a file, and sets no option that would act on the standby's
// wait (xtrace, verbose, noexec, onecmd).
func (s *Snapshot) StandbyReady() bool { return s.standby != "" }

// ForStandby returns a copy of s that a standby shell restores: Replay of
// the copy restores s from the standby's restore file, which leaves the
// traps, disabled builtins and $_ to GoAhead's line. It defines the same
// names as s.
func (s *Snapshot) ForStandby() *Snapshot {
	c := *s
	c.restore = s.standby
	return &c
}

// GoAhead is the line a standby shell of s runs, with its go-ahead, right
// before script: BASH_EXECUTION_STRING becomes script, as in a replay, and
// the part of the state that would have acted on the wait is restored. It
// is one line, ending in "; ", so that the script's line numbers are a
// replay's.
func (s *Snapshot) GoAhead(script string) string {
	// export -n: under allexport the assignment would export it.
	return "BASH_EXECUTION_STRING=" + ansiQuote(script) + "; \\builtin export -n BASH_EXECUTION_STRING; " + s.goAhead
}

// Definitions are the names a bash state defines.
type Definitions struct {
	// Functions and Aliases are the names of the state's functions and
	// aliases.
	Functions, Aliases map[string]bool
	// ExpandAliases is set when the state turns expand_aliases on.
	ExpandAliases bool
	// Traps is set when the state sets a trap, after which bash runs no
	// command in its own place.
	Traps bool
}

// Definitions returns the names s's bash state defines, read from its
// capture's records; nil for a snapshot of zsh or sh, which no standby
// serves.
func (s *Snapshot) Definitions() *Definitions { return s.definitions }
