package shellsnap

import (
	"regexp"
	"strings"
	"sync"
)

// What other packages read of a bash state: the names it defines and its
// set -o section. Both follow the layout the capture script writes
// (script.go); a standby shell (package standby) needs them.

// optionsHeader starts the bash state's last section, its set -o options.
const optionsHeader = "\n# setopts "

// SplitOptions cuts a bash state before its set -o options section, the
// last one the capture script writes: restore is the state without it, and
// options the section ("" when there is none).
func SplitOptions(state string) (restore, options string) {
	i := strings.LastIndex(state, optionsHeader)
	if i < 0 {
		return state, ""
	}
	return state[:i+1], state[i+1:]
}

// WithState returns a copy of s that carries state in place of s.State,
// such as the part SplitOptions leaves to restore: Replay of the copy
// restores that state with everything else of s (its environment above
// all) unchanged.
func (s *Snapshot) WithState(state string) *Snapshot {
	return &Snapshot{
		State:         state,
		Env:           s.Env,
		Captured:      s.Captured,
		FunctionCount: s.FunctionCount,
		AliasCount:    s.AliasCount,
		OptionCount:   s.OptionCount,
		Dropped:       s.Dropped,
		restore:       s.restore,
	}
}

// Definitions are the names a bash state defines.
type Definitions struct {
	// Functions and Aliases are the names of the state's functions and
	// aliases.
	Functions, Aliases map[string]bool
	// ExpandAliases is set when the state turns expand_aliases on.
	ExpandAliases bool
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
