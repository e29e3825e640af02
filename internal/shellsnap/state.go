package shellsnap

import (
	"regexp"
	"strings"
	"sync"
)

// What a standby shell (package standby) reads of a snapshot: the names its
// state defines, its standby restore file and go-ahead line.

// optionsHeader starts the last section of a bash state of the
// reference's format, its set -o options.
const optionsHeader = "\n# setopts "

// referenceTraced reports whether a bash state of the reference's format
// turns xtrace or verbose on in its options section: its restore would
// trace a standby's wait.
func referenceTraced(state string) bool {
	i := strings.LastIndex(state, optionsHeader)
	return i >= 0 && (strings.Contains(state[i:], "xtrace") || strings.Contains(state[i:], "verbose"))
}

// WithState returns a copy of s that carries state in place of s.State:
// Replay of the copy restores that state with everything else of s (its
// environment and restore files above all) unchanged.
func (s *Snapshot) WithState(state string) *Snapshot {
	return &Snapshot{
		State:         state,
		Env:           s.Env,
		Captured:      s.Captured,
		FunctionCount: s.FunctionCount,
		AliasCount:    s.AliasCount,
		OptionCount:   s.OptionCount,
		Unrestored:    s.Unrestored,
		restore:       s.restore,
		standby:       s.standby,
		goAhead:       s.goAhead,
		terminal:      s.terminal,
	}
}

// StandbyReady reports whether a standby shell can serve s: its state is
// restored from a file, and sets no option that would act on the standby's
// wait (xtrace, verbose, noexec, onecmd).
func (s *Snapshot) StandbyReady() bool { return s.standby != "" }

// ForStandby returns a copy of s that a standby shell restores: Replay of
// the copy restores s from the standby's restore file, which leaves the
// traps, disabled builtins and $_ to GoAhead's line. It defines the same
// names as s.
func (s *Snapshot) ForStandby() *Snapshot {
	c := s.WithState(s.State)
	c.restore = s.standby
	d := s.Definitions()
	c.namesOnce.Do(func() { c.definitions = d })
	return c
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

var functionHeader = regexp.MustCompile(`(?m)^([^\s()]+) \(\) $`)
var aliasLine = regexp.MustCompile(`(?m)^alias ([^=\s]+)=`)

// Definitions returns the names s's bash state defines, read once. Heredoc
// lines that look like definitions count too: a reader that refuses what it
// cannot be sure of only refuses more.
func (s *Snapshot) Definitions() *Definitions {
	s.namesOnce.Do(func() {
		d := &Definitions{Functions: map[string]bool{}, Aliases: map[string]bool{}}
		for _, m := range functionHeader.FindAllStringSubmatch(s.State, -1) {
			d.Functions[m[1]] = true
		}
		for _, m := range aliasLine.FindAllStringSubmatch(s.State, -1) {
			d.Aliases[m[1]] = true
		}
		d.ExpandAliases = strings.Contains(s.State, "\nshopt -s expand_aliases\n")
		s.definitions = d
	})
	return s.definitions
}

// snapshotNames is embedded in Snapshot for Definitions.
type snapshotNames struct {
	namesOnce   sync.Once
	definitions *Definitions
}
