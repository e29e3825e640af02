package shellsnap

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A session command's dump lists its functions with declare -f and
// compares the listing with the previous state's (bashDump's fnsame), which
// with a profile's 200 functions is about a fifth of the dump. When the
// script cannot have changed a function, read from its text and the state
// it starts from, the dump skips the listing and says fnsame at once
// (keepsFunctions). In bash a function is defined, changed or removed only
// by a function definition, unset, the declare family's -f, or code that
// runs one: a function called, eval, source, a trap, an alias expanded, and
// a few builtins that run a command or a function (command, builtin, exec,
// compgen -F, mapfile -C, jobs -x, fc, enable -f). The reading refuses the
// script when any of these could happen, whatever the values of its
// variables: every command it names must be a literal word, neither a
// function nor an alias of the state, and a builtin only if it runs no
// code; no variable whose name is not written in the script can be
// assigned (an alias can be made through BASH_ALIASES); and the state
// itself must run nothing on its own (no trap, no nameref, no function
// named builtin or command, which the dump's own commands would call).

// fnKeepBuiltins are the builtins a script may run when its functions are
// to be kept: none runs code or assigns a variable named by a value.
var fnKeepBuiltins = map[string]bool{
	":": true, "[": true, "test": true, "true": true, "false": true, "echo": true, "pwd": true,
	"cd": true, "pushd": true, "popd": true, "dirs": true, "break": true, "continue": true,
	"return": true, "exit": true, "logout": true, "shift": true, "set": true, "shopt": true,
	"umask": true, "ulimit": true, "hash": true, "type": true, "help": true, "times": true,
	"kill": true, "let": true, "unalias": true, "disown": true, "history": true, "caller": true,
	"suspend": true,
}

// bashBuiltins are every builtin of bash 5.2 (compgen -b); one that is
// neither in fnKeepBuiltins nor checked by keepsFunctions refuses the script.
var bashBuiltins = strings.Fields(`. : [ alias bg bind break builtin caller cd command compgen complete
	compopt continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help
	history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set
	shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait`)

// bashReservedWords are the words bash may read as syntax before it looks
// for an alias; a state with an alias of one of these keeps no functions.
var bashReservedWords = strings.Fields(`! [[ ]] { } case coproc do done elif else esac fi for function if in select then time until while`)

// fnGuard is what keepsFunctions needs of a state, read once: its
// functions and aliases by name, and whether the state allows it at all;
// and whether a function is exported (keptEnv).
type fnGuard struct {
	ok               bool
	functions, alias map[string]bool
	exported         bool
}

// scriptReach is what a session command's script can change, read from
// its text: keepFns when it cannot change a function (keepsFunctions),
// and then vars, the variables it can change (changedVars), unless nil:
// any; and same, the kinds of the dump's records it cannot change.
type scriptReach struct {
	keepFns    bool
	vars, same []string
}

// reach reads what script, run in s, can change.
func (s *SessionState) reach(script string) scriptReach {
	f := s.keptThrough(script)
	if f == nil {
		return scriptReach{}
	}
	vars, same, _ := s.changedVars(f)
	return scriptReach{keepFns: true, vars: vars, same: same}
}

// keepsFunctions reports whether script, run in s, cannot change s's
// functions (see above), so that its dump may skip their listing.
func (s *SessionState) keepsFunctions(script string) bool { return s.keptThrough(script) != nil }

// keptThrough returns script parsed when, run in s, it cannot change s's
// functions, and nil otherwise.
func (s *SessionState) keptThrough(script string) *syntax.File {
	if s == nil || s.shell != "bash" {
		return nil
	}
	if !s.fnGuard().ok {
		return nil
	}
	// A name the script writes in any quoting: an alias made by assigning
	// to BASH_ALIASES.
	if strings.Contains(unquoted(script), "BASH_ALIASES") {
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil
	}
	keep := true
	syntax.Walk(f, func(node syntax.Node) bool {
		if !keep {
			return false
		}
		switch n := node.(type) {
		case *syntax.FuncDecl:
			keep = false
		case *syntax.DeclClause:
			keep = s.guard.keepsDecl(n)
		case *syntax.CallExpr:
			keep = len(n.Args) == 0 || s.guard.keepsCall(n.Args)
		case *syntax.ParamExp:
			// ${!name=value} assigns the variable name holds.
			keep = !n.Excl || n.Exp == nil
		}
		return keep
	})
	if !keep {
		return nil
	}
	return f
}

// fnGuard returns what keepsFunctions reads of s, read once.
func (s *SessionState) fnGuard() fnGuard {
	s.guardOnce.Do(func() { s.guard = s.readFnGuard() })
	return s.guard
}

// keptEnv is how the dump of a command that keeps s's functions
// (keepsFunctions) hands on the environment (bashEnd.env): env -0's when
// s exports a function, which the command cannot change, and otherwise
// declare -p's, since s has no nameref (keepsFunctions refuses one) and
// the command cannot make one.
func (s *SessionState) keptEnv() string {
	if s.fnGuard().exported {
		return "env"
	}
	return "declare"
}

// keepsDecl reports whether a declare, local, typeset, export or readonly
// leaves the functions: no -f or -F (a function's attributes, which the
// listing holds), no -n (a nameref can make an alias), and every option and
// name a literal word.
func (g fnGuard) keepsDecl(d *syntax.DeclClause) bool {
	if d.Variant.Value == "nameref" {
		return false
	}
	if listsOnly(d.Variant.Value, d.Args) {
		return true
	}
	for _, a := range d.Args {
		if !a.Naked || a.Value == nil {
			continue // NAME or NAME=VALUE: the name is written
		}
		w := literal(a.Value)
		if w == "" || (w[0] == '-' || w[0] == '+') && strings.ContainsAny(w, "fFn") {
			return false
		}
	}
	return true
}

// listsOnly reports whether a declare only prints: its first word is -p
// for declare, typeset and local (bash then prints each name and sets
// nothing; export -p and readonly -p still set their names), or it has
// options and no name (it lists the variables or functions that have
// them).
func listsOnly(variant string, args []*syntax.Assign) bool {
	if len(args) == 0 {
		return true
	}
	names := false
	for i, a := range args {
		w := ""
		if a.Naked && a.Value != nil {
			w = literal(a.Value)
		}
		if i == 0 && w != "" && w[0] == '-' && strings.Contains(w, "p") && variant != "export" && variant != "readonly" {
			return true
		}
		names = names || w == "" || w[0] != '-' && w[0] != '+'
	}
	return !names
}

// keepsCall reports whether a simple command leaves the functions.
func (g fnGuard) keepsCall(args []*syntax.Word) bool {
	name := literal(args[0])
	if name == "" || g.functions[name] || g.alias[name] {
		return false
	}
	switch name {
	case "unset":
		// unset NAME removes a function NAME when no variable has the name.
		for _, w := range args[1:] {
			v := literal(w)
			if v == "" || v[0] == '-' && strings.Contains(v, "f") || g.functions[v] {
				return false
			}
		}
		return true
	case "printf":
		// printf -v NAME assigns NAME; past the format, nothing is an option.
		format := "-"
		if len(args) > 1 {
			format = literal(args[1])
		}
		return len(args) < 2 || format == "--" || format != "" && format[0] != '-'
	case "alias":
		// alias and alias -p only print.
		return len(args) == 1 || len(args) == 2 && literal(args[1]) == "-p"
	case "trap":
		// trap, and trap -p with signals, only print.
		for i, w := range args[1:] {
			if v := literal(w); v == "" || i == 0 && v != "-p" {
				return false
			}
		}
		return true
	case "read", "getopts":
		// Each assigns the variables its arguments name.
		for _, w := range args[1:] {
			if literal(w) == "" {
				return false
			}
		}
		return true
	}
	if fnKeepBuiltins[name] {
		return true
	}
	for _, b := range bashBuiltins {
		if name == b {
			return false
		}
	}
	return true // a program: another process
}

// literal returns what bash reads w as when it is written whole in the
// script, with no expansion and no backslash outside '...' (plain, '...'
// and "..." text), or "".
func literal(w *syntax.Word) string {
	var b strings.Builder
	plain := func(s string) bool {
		b.WriteString(s)
		return !strings.Contains(s, `\`)
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if !plain(p.Value) {
				return ""
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return ""
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); !ok || !plain(lit.Value) {
					return ""
				}
			}
		default:
			return ""
		}
	}
	return b.String()
}

// readFnGuard reads what keepsFunctions needs of s.
func (s *SessionState) readFnGuard() fnGuard {
	g := fnGuard{functions: map[string]bool{}, alias: map[string]bool{}}
	if s.fns == nil {
		return g // no listing to hand on
	}
	for _, r := range s.recs {
		switch r.kind {
		case "fn", "fntype":
			g.functions[r.name] = true
		case "alias":
			g.alias[r.name] = true
		case "fnattrs":
			for _, m := range fnattrLine.FindAllStringSubmatch(r.payload, -1) {
				g.exported = g.exported || strings.Contains(m[1], "x")
			}
		case "traps":
			if strings.TrimSpace(r.payload) != "" {
				return g // a trap runs code whenever its signal comes
			}
		}
	}
	for _, w := range bashReservedWords {
		if g.alias[w] {
			return g
		}
	}
	if g.functions["builtin"] || g.functions["command"] {
		return g // the dump's own \builtin and \command would call it
	}
	vars := bashVars(byKind(s.recs))
	for _, v := range vars {
		if strings.Contains(v.flags, "n") {
			return g // a nameref can make any name an alias's
		}
	}
	// bash 5.3's ${ command; } runs in the shell itself, and any arithmetic
	// on a variable's value can reach one.
	version := vars["BASH_VERSION"].text
	_, version, _ = strings.Cut(version, `="`)
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	maj, err1 := strconv.Atoi(major)
	min, err2 := strconv.Atoi(minor)
	g.ok = err1 == nil && err2 == nil && (maj < 5 || maj == 5 && min <= 2)
	return g
}
