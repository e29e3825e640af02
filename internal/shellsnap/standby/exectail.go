package standby

import (
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"

	"github.com/snapexec/snapexec/internal/shellsnap"
)

// A bash -c shell runs the last command of its string in place of itself
// (exec, no fork) when that command is a simple command without redirections
// (or the right side of a final &&, || or ;) and no trap is set. Replay's
// command is such a string, so there the user's last command becomes the
// process, with its own exit status or signal. A standby runs the script in
// an eval, where bash never does that; tailScript restores it by writing
// the exec bash would have done, or refuses the script when it cannot tell
// (docs/design/standby.md#the-exec-tail).

// tailScript returns the script a standby shell runs for in's script so
// that the user's command cannot tell it from Replay's: the script itself, or
// the script with "_=PATH exec " before the last command when bash would
// have run that command in place of Replay's shell. (Its environment then
// lists _ first rather than last: the same variables, in another order.)
//
// ok is false when it cannot tell what bash would do: the script does not
// parse, or may expand a restored alias; or its last command is an external
// program run in place of the shell and the script also defines or calls
// functions, sets traps or aliases, evaluates or sources code, or names a
// command through an expansion, or that program has assignments or is not
// found.
//
// in must be a launch serves accepts. dir and env (NAME=VALUE) are the
// launch's working directory and environment, whose PATH finds the
// program; builtins are the shell's builtin commands and reserved words
// (shellBuiltins).
func tailScript(in shellsnap.ReplayInput, dir string, env []string, builtins map[string]bool) (string, bool) {
	if in.Shell == "zsh" {
		return zshTailScript(in, dir, env, builtins)
	}
	if builtins == nil {
		return "", false
	}
	script := in.Command[2]
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return "", false
	}
	if n := len(f.Stmts); strings.ContainsRune(script, '\r') || n > 0 && strings.ContainsRune(script[f.Stmts[n-1].End().Offset():], '\\') {
		// A CR, which bash takes into a word where this parse ends one,
		// or after the last command a backslash (a line continuation):
		// whether bash runs the command in its own place is then its own
		// business.
		return "", false
	}
	names := in.Snapshot.Definitions()
	if !aliasFree(f, names) {
		return "", false // bash's parse may not be this one
	}
	call, ok := execTail(f, script)
	if !ok {
		return script, true // bash forks for the last command too
	}
	word := call.Args[0].Lit()
	switch {
	case !plainWord.MatchString(word), word == "command", word == "builtin":
		return "", false
	case builtins[word], names.Functions[word]:
		return script, true // runs in the shell either way
	}
	// bash runs the program in its own place unless a trap is set by then,
	// and only if the name still means the program: the script must show
	// that nothing it runs first could change either.
	// A trap the state sets may keep bash from it: which ones do is bash's
	// own business, so the script is left to a fresh replay.
	if names.Traps || !plainCommands(f, names) || len(call.Assigns) > 0 || names.Functions["exec"] || names.Aliases["exec"] {
		return "", false
	}
	path, ok := findProgram(word, dir, env)
	if !ok {
		return "", false // the error messages of exec and of a search differ
	}
	at := int(call.Args[0].Pos().Offset())
	// bash exports _ as the program's path to a command it runs; the exec
	// builtin does not, unless told.
	return script[:at] + "_=" + quote(path) + " \\exec " + script[at:], true
}

// aliasFree reports whether bash would expand no alias in f: no command word
// is a restored alias while expand_aliases is on, and f neither defines
// aliases nor runs shopt (which could turn expand_aliases on).
func aliasFree(f *syntax.File, names *shellsnap.Definitions) bool {
	ok := true
	syntax.Walk(f, func(node syntax.Node) bool {
		if call, isCall := node.(*syntax.CallExpr); isCall && len(call.Args) > 0 {
			word := call.Args[0].Lit()
			switch {
			case word == "alias":
				ok = false
			case len(names.Aliases) > 0 && (word == "shopt" || names.ExpandAliases && names.Aliases[word]):
				ok = false
			}
		}
		return ok
	})
	return ok
}

// plainCommands reports whether every command f runs is named by a plain
// word that is no function of the state and none of the builtins whose
// effect a parse cannot see, and whether f defines no function.
func plainCommands(f *syntax.File, names *shellsnap.Definitions) bool {
	ok := true
	syntax.Walk(f, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.FuncDecl:
			ok = false
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				word := n.Args[0].Lit()
				ok = plainWord.MatchString(word) && !names.Functions[word] && !unseen[word]
			}
		}
		return ok
	})
	return ok
}

// plainWord is a command name without quotes, expansions or patterns.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./+@%:,-]+$`)

// unseen are the builtins whose effect on the rest of the script a parse
// cannot see: traps (which stop bash's exec), aliases and functions
// (which change what a name runs), and code run from strings or files.
var unseen = map[string]bool{
	"trap": true, "alias": true, "unalias": true, "enable": true, "builtin": true,
	"command": true, "eval": true, "source": true, ".": true, "hash": true,
}

// execTail returns the command bash -c would run in place of itself if it
// is an external program: the last top-level command when it is a simple
// command without redirections, negation or time, or the right side of a
// final &&, || or ; list; and only when nothing but blanks, a comment and
// one newline follow it.
func execTail(f *syntax.File, src string) (*syntax.CallExpr, bool) {
	if len(f.Stmts) == 0 {
		return nil, false
	}
	last := f.Stmts[len(f.Stmts)-1]
	if !onlyEndFollows(src[last.End().Offset():]) {
		return nil, false
	}
	joined := false // last is the right side of a ; list on its line
	if len(f.Stmts) > 1 {
		prev := f.Stmts[len(f.Stmts)-2]
		if prev.Semicolon.IsValid() && prev.Semicolon.Line() == last.Pos().Line() {
			if prev.Background {
				return nil, false // a & list: bash forks
			}
			joined = true
		}
	}
	stmt := last
	if bin, ok := last.Cmd.(*syntax.BinaryCmd); ok && !joined && !last.Negated && len(last.Redirs) == 0 && !last.Background && !last.Coprocess {
		if bin.Op != syntax.AndStmt && bin.Op != syntax.OrStmt {
			return nil, false
		}
		stmt = bin.Y
	}
	call, ok := stmt.Cmd.(*syntax.CallExpr)
	if !ok || stmt.Negated || stmt.Background || stmt.Coprocess || len(stmt.Redirs) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	procSubst := false
	syntax.Walk(call, func(node syntax.Node) bool {
		if _, ok := node.(*syntax.ProcSubst); ok {
			procSubst = true
		}
		return !procSubst
	})
	return call, !procSubst
}

// onlyEndFollows reports whether rest, the text after the last statement, is
// blanks, an optional comment and at most one newline.
func onlyEndFollows(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	if strings.HasPrefix(rest, "#") {
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[i:]
		} else {
			rest = ""
		}
	}
	return rest == "" || rest == "\n"
}

// findProgram finds word as bash's search would, through the PATH of env
// (an empty entry is the working directory), and returns the path bash
// would name it by.
func findProgram(word, dir string, env []string) (string, bool) {
	if strings.Contains(word, "/") {
		return word, executableFile(word, dir)
	}
	var path string
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path, found = v, true
		}
	}
	if !found {
		return "", false // bash would search its built-in default
	}
	for _, entry := range strings.Split(path, ":") {
		if entry == "" {
			entry = "."
		}
		candidate := strings.TrimSuffix(entry, "/") + "/" + word
		if executableFile(candidate, dir) {
			return candidate, true
		}
	}
	return "", false
}

// executableFile reports whether path, relative to dir, is a file this
// process may execute.
func executableFile(path, dir string) bool {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return false
	}
	return unix.Faccessat(unix.AT_FDCWD, path, unix.X_OK, unix.AT_EACCESS) == nil
}
