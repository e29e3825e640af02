package shellsnap

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A replay restores a snapshot's state from a restore file: shell code that
// the replayed shell runs as a startup file before the user's command (bash
// through BASH_ENV, zsh through ZDOTDIR's .zshenv, sh by ".") and that leaves
// the shell as the login profile left it. The file is built from the
// capture's records piece by piece: each function, variable, alias and
// completion is one step, so that one the shell cannot read back is dropped
// by name (the receipt's outcome is then partial) and never takes the others
// with it.

// step is one piece of a restore.
type step struct {
	// kind names a piece a capture validates ("function", "variable",
	// "alias", "completion"); a dropped one is reported as "kind name".
	// Other steps are empty: they cannot fail to parse.
	kind, name string
	// code restores the piece, at the top level of the restore file.
	code string
	// tail steps run in the restore's last compound command (bash).
	tail bool
	// check steps run in a validation too, before the pieces after them.
	check bool
	// line is the line a sh function starts on in its file (shRender).
	line int
	// late steps would act on a standby shell's wait for its command (a
	// DEBUG trap would run before each of its commands, a disabled builtin
	// would stop it): a standby runs them with the go-ahead instead.
	late bool
}

// piece reports whether s is validated.
func (s step) piece() bool { return s.kind != "" }

// Piece is one piece of a snapshot's state that a restore defines on its
// own: a function, variable, alias or completion, by name; or a descriptor
// the startup files left open, by number (descriptors.go). Names only: a
// piece's value never leaves the server.
type Piece struct {
	// Kind is "function", "variable", "alias", "completion" or "descriptor".
	Kind string
	// Name is the piece's name as the shell knows it.
	Name string
}

// restorePlan is a snapshot's state as the steps that restore it.
type restorePlan struct {
	shell string
	steps []step
	// last sets the options that act on every command after them (bash's
	// xtrace, verbose, noexec, onecmd), after the restore's last step; in
	// zsh, with the aliases option and the unloading of modules the restore
	// loaded (zshOptionSteps).
	last string
	// underscore is $_ as the profile left it, nil when unknown.
	underscore *string
	// finally are steps after everything else: a function named builtin and
	// its attributes.
	finally []step
	// options counts the options the plan sets, on or off.
	options int
	// unrestored are pieces the plan knows it cannot restore (a sh function
	// whose text is not known), which no validation needs to find.
	unrestored []Piece
}

// add appends s to the plan's steps.
func (p *restorePlan) add(s step) { p.steps = append(p.steps, s) }

// records are a capture's records by kind, in the order they came.
type records map[string][]record

// byKind sorts recs by kind.
func byKind(recs []record) records {
	rs := records{}
	for _, r := range recs {
		rs[r.kind] = append(rs[r.kind], r)
	}
	return rs
}

// one returns the payload of the first record of kind; ok is false when
// there is none.
func (rs records) one(kind string) (payload string, ok bool) {
	if r := rs[kind]; len(r) > 0 {
		return r[0].payload, true
	}
	return "", false
}

// drop removes the steps whose indices failed from plan, and returns them
// as pieces.
func (p *restorePlan) drop(failed map[int]bool) (dropped []Piece) {
	kept := p.steps[:0:0]
	for i, s := range p.steps {
		if failed[i] {
			dropped = append(dropped, Piece{Kind: s.kind, Name: s.name})
			continue
		}
		kept = append(kept, s)
	}
	p.steps = kept
	return dropped
}

// failedSteps reads a validation run's output: a line "F i" for each piece
// i that failed. Other lines are ignored.
func failedSteps(out []byte) map[int]bool {
	failed := map[int]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "F "); ok {
			if i, err := strconv.Atoi(rest); err == nil {
				failed[i] = true
			}
		}
	}
	return failed
}

// quote quotes s as one shell word that bash, zsh and dash read back as s,
// bytes and all: single quotes, each quote inside closed, escaped and
// reopened.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// validation renders the script that checks plan's pieces in a shell of its
// own: the check steps run as they would in the restore, and each piece runs
// through eval (the shell's check), which prints "F i" when piece i fails.
func (p *restorePlan) validation(prelude string, check func(i int, code string) string) string {
	var b strings.Builder
	b.WriteString(prelude)
	for i, s := range p.steps {
		switch {
		case s.piece():
			b.WriteString(check(i, s.code))
		case s.check:
			b.WriteString(s.code)
		default:
			continue
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// hasPieces reports whether p has anything to validate.
func (p *restorePlan) hasPieces() bool {
	for _, s := range p.steps {
		if s.piece() {
			return true
		}
	}
	return false
}

// displayName is s as a piece's name shows it: as is, or Go-quoted when it
// holds bytes a reader could not see.
func displayName(s string) string {
	q := strconv.Quote(s)
	if q[1:len(q)-1] == s {
		return s
	}
	return q
}

// utf8Safe returns text with every byte that is not UTF-8 made '?', at the
// same offsets: the parser reads UTF-8 only.
func utf8Safe(text []byte) []byte {
	out := bytes.Clone(text)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && size == 1 {
			out[i] = '?'
		}
		i += size
	}
	return out
}
