package shellsnap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/syntax"
)

// dash cannot print a function, so a sh capture names the functions its
// shell has (type, shCapture's "functions" record) and lists the files
// the login sourced ("file" records); their text comes from those files.
// A name is restored only when every definition of it in those files reads
// the same: which of two different ones ran, dash cannot tell, and a
// function none of them defines (one an eval made) has no text. Either is
// named as unrestored, never guessed. A function whose name no file holds
// (one that an eval of a program's output defined, or one of a file sourced
// with \. by a name the capture cannot work out) is not even known by name:
// when a file that ran has such an eval or source outside its functions, or
// the profile removed the capture's alias of "." (the files it sourced
// after that are not known), the snapshot names the function "*" as
// unrestored, so that its receipt says partial.

// shFunctionSteps returns the steps that define the functions of a sh
// capture's records, in the order of their files (shRenderFunctions), and
// the functions it cannot restore, by name.
func shFunctionSteps(recs []record) (steps []step, unrestored []Piece) {
	var files []string
	names, scanned, unwatched := map[string]bool{}, false, false
	for _, r := range recs {
		switch r.kind {
		case "file":
			files = append(files, r.payload)
		case "unwatched":
			unwatched = true
		case "functions":
			scanned = true
			for line := range strings.SplitSeq(r.payload, "\n") {
				if name, ok := strings.CutSuffix(line, " is a shell function"); ok && !strings.HasPrefix(name, "__snapexec_") {
					names[name] = true
				}
			}
		}
	}
	defs, hidden := shFileFunctions(files)
	if !scanned {
		// The capture could not ask its shell (no grep or sort): every
		// function the files define may be there.
		for name := range defs {
			names[name] = !strings.HasPrefix(name, "__snapexec_")
		}
	}
	var chosen []shDefinition
	for name, ok := range names {
		if !ok {
			continue
		}
		d := defs[name]
		if !scanned || len(d) != 1 {
			unrestored = append(unrestored, Piece{Kind: "function", Name: name})
			continue
		}
		for _, def := range d {
			chosen = append(chosen, def)
		}
	}
	slices.SortFunc(unrestored, func(a, b Piece) int { return strings.Compare(a.Name, b.Name) })
	if hidden || unwatched {
		unrestored = append(unrestored, Piece{Kind: "function", Name: "*"})
	}
	if len(chosen) == 0 {
		return nil, unrestored
	}
	// In the order of the files, so that shRender defines those of one file
	// in one eval.
	slices.SortFunc(chosen, func(a, b shDefinition) int { return a.order - b.order })
	var set, unset strings.Builder
	for i := range shPadBits {
		if i == 0 {
			set.WriteString("__snapexec_l0=" + quote("\n"))
		} else {
			fmt.Fprintf(&set, "; __snapexec_l%d=$__snapexec_l%d$__snapexec_l%d", i, i-1, i-1)
		}
		fmt.Fprintf(&unset, " __snapexec_l%d", i)
	}
	steps = []step{{code: set.String()}}
	for _, def := range chosen {
		steps = append(steps, step{kind: "function", name: def.name, code: def.code, line: def.line})
	}
	return append(steps, step{code: `\unset` + unset.String()}), unrestored
}

// shRenderFunctions writes the function steps of steps, which start a
// plan's functions, as evals: dash's eval numbers the lines of its text from
// 1, so each function is preceded by the newlines that put it on the line
// it starts on in its file, and an error in it names the user's line. The
// functions of one file follow each other in one eval, newlines between
// them, so that a file's functions cost its length once. eval is quoted:
// the aliases are restored before the functions. It returns the steps after
// the functions.
func shRenderFunctions(b *strings.Builder, steps []step) []step {
	at := 0 // the line the current eval has reached; 0: no eval open
	for len(steps) > 0 && steps[0].line > 0 {
		s := steps[0]
		steps = steps[1:]
		if at > 0 && s.line <= at {
			b.WriteString("\n")
			at = 0
		}
		if at == 0 {
			b.WriteString(`\eval `)
			at = 1
		}
		b.WriteString(`"` + shLinePad(s.line-at+1) + `"` + quote(s.code))
		at = s.line + strings.Count(s.code, "\n")
	}
	if at > 0 {
		b.WriteString("\n")
	}
	return steps
}

// shPadBits bounds the line a function's definition starts on: a line
// beyond 2^shPadBits is given as that.
const shPadBits = 16

// shLinePad returns the expansion of line-1 newlines, from the variables
// __snapexec_l0 (one newline) to __snapexec_l15 (2^15): dash's eval numbers
// the lines of its text from 1, so a function defined after them reports
// the lines of an error in it as the file it came from does.
func shLinePad(line int) string {
	var b strings.Builder
	n := min(max(line-1, 0), 1<<shPadBits-1)
	for i := shPadBits - 1; i >= 0; i-- {
		if n&(1<<i) != 0 {
			fmt.Fprintf(&b, "${__snapexec_l%d}", i)
		}
	}
	return b.String()
}

// shDefinition is one definition of a function in a file: the text that
// defines it (the file's own text when it reads back the same) and the line
// it starts on.
type shDefinition struct {
	name, code string
	line       int
	// order is the definition's place in the files, in their order.
	order int
}

// shFileFunctions parses files as POSIX shell and returns, by name, the
// distinct definitions of every function they define at any depth, by their
// printed form (the last one of each form), and whether one of them may
// define functions it does not show (shHides). A file that does not parse
// defines nothing.
func shFileFunctions(files []string) (defs map[string]map[string]shDefinition, hidden bool) {
	out := map[string]map[string]shDefinition{}
	seen := map[string]bool{}
	parser := syntax.NewParser(syntax.Variant(syntax.LangPOSIX))
	for _, path := range files {
		path = filepath.Clean(path)
		if seen[path] {
			continue
		}
		seen[path] = true
		text, err := shReadSource(path)
		if err != nil {
			continue
		}
		f, err := parser.Parse(bytes.NewReader(utf8Safe(text)), "")
		if err != nil {
			continue
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.FuncDecl:
				// A body runs only when called.
				return false
			case *syntax.CallExpr:
				hidden = hidden || shHides(n)
			}
			return true
		})
		syntax.Walk(f, func(n syntax.Node) bool {
			fn, ok := n.(*syntax.FuncDecl)
			if !ok {
				return true
			}
			printed := printNode(fn)
			code := string(text[fn.Pos().Offset():fn.End().Offset()])
			if g, err := parser.Parse(strings.NewReader(string(utf8Safe([]byte(code)))), ""); err != nil ||
				len(g.Stmts) != 1 || printNode(g.Stmts[0].Cmd) != printed {
				code = printed
			}
			if out[fn.Name.Value] == nil {
				out[fn.Name.Value] = map[string]shDefinition{}
			}
			out[fn.Name.Value][printed] = shDefinition{name: fn.Name.Value, code: code, line: int(fn.Pos().Line()), order: len(seen)<<32 | int(fn.Pos().Offset())}
			return true
		})
	}
	return out, hidden
}

// shPlain reports whether w is plain text: no expansion of any kind.
func shPlain(w *syntax.Word) bool {
	for _, part := range w.Parts {
		switch part := part.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, in := range part.Parts {
				if _, ok := in.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// shDotWord matches the name of a file sourced with \. or command . that the
// capture works out (shCapture's __snapexec_unseen): plain text and
// parameter expansions, nothing that runs a command or assigns.
var shDotWord = regexp.MustCompile(`^[A-Za-z0-9_/.~"${}-]+$`)

// shHides reports whether call may define functions that no file shows: an
// eval of anything but plain text, or a source the capture's alias of "."
// does not see (\., '.', command .) by a name it cannot work out.
func shHides(call *syntax.CallExpr) bool {
	args := call.Args
	if len(args) > 1 && printNode(args[0]) == "command" {
		args = args[1:]
	}
	if len(args) < 2 {
		return false
	}
	switch printNode(args[0]) {
	case "eval", `\eval`:
		for _, w := range args[1:] {
			if !shPlain(w) {
				return true
			}
		}
	case ".", `\.`, `'.'`, `"."`:
		if len(args) == len(call.Args) && printNode(args[0]) == "." {
			return false // the capture's alias of "." sees it
		}
		return !shDotWord.MatchString(printNode(args[1]))
	}
	return false
}

// shMaxSource bounds the size of a file read for its functions.
const shMaxSource = 8 << 20

// shReadSource reads path if it is a regular file of at most shMaxSource
// bytes: a profile may source /dev/stdin or a FIFO, which the server must
// not wait on.
func shReadSource(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > shMaxSource {
		return nil, errors.New("not a regular file of at most 8 MiB")
	}
	return io.ReadAll(io.LimitReader(f, shMaxSource))
}

// printNode prints n as the syntax package does.
func printNode(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, n); err != nil {
		return ""
	}
	return b.String()
}
