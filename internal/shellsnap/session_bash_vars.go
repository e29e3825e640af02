package shellsnap

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A session command's dump lists every variable with declare -p, which
// with a profile's few hundred variables is the dump's largest part (about
// a third of it, 0.2 ms of bash's time) and most of what the server then
// reads. When the script cannot change its functions (keepsFunctions: it
// runs no code but its own, every command a literal word), the variables
// it can change are written in it, and the dump lists only those
// (changedVars); the others are the previous state's. In bash a script
// of that kind changes a variable only by naming it: an assignment (a
// command's prefix, the declare family, ${name=word}, a for or select
// loop, a {name}> redirection), read, getopts, unset, cd and the
// directory stack (PWD, OLDPWD, DIRSTACK), [[ =~ ]] (BASH_REMATCH), and
// arithmetic, whose assignments name their variables too. But arithmetic
// also evaluates the value of every variable it reads as an expression,
// so that x='y=5'; (( x )) assigns y, and so does an indexed array's
// subscript (${a[x]}, a[x]=1, unset 'a[x]', [[ -v a[x] ]]), a substring's
// offset, [[ x -eq 1 ]] and an assignment to an integer variable. The
// reading therefore refuses the script unless every variable that
// arithmetic reads holds a decimal integer (or nothing) in the state and
// is given only integers by the script, and every subscript it cannot
// read is refused. What bash changes on its own (the volatile variables,
// LINES and COLUMNS after a program) is listed every time, or not carried.

// alwaysListed are the variables a narrow listing holds whatever the
// script, so that the merged listing is the one a full listing would
// give: those the options and the directory are (BASHOPTS, SHELLOPTS,
// DIRSTACK, PWD, which the options and directory steps restore), and
// OLDPWD. The dump's own variables (__snapexec_...) are never restored,
// and are left as the previous listing had them.
var alwaysListed = []string{"BASHOPTS", "DIRSTACK", "OLDPWD", "PWD", "SHELLOPTS"}

// optionVars are the variables set and shopt change as they change an
// option: posix mode sets POSIXLY_CORRECT, a compatNN option BASH_COMPAT.
var optionVars = []string{"BASH_COMPAT", "POSIXLY_CORRECT"}

// windowVars are the variables bash sets after a program ends, when
// checkwinsize is on and it has a terminal.
var windowVars = []string{"COLUMNS", "LINES"}

// intVolatile are the variables bash itself keeps an integer in, which
// arithmetic may read whatever the state says.
var intVolatile = map[string]bool{
	"RANDOM": true, "SRANDOM": true, "SECONDS": true, "LINENO": true, "EPOCHSECONDS": true, "BASHPID": true,
	"PPID": true, "UID": true, "EUID": true, "HISTCMD": true, "BASH_SUBSHELL": true,
}

// decimal is an integer as bash reads it in arithmetic with no base, or
// nothing (0).
var decimal = regexp.MustCompile(`^-?[0-9]*$`)

// varReach collects what a script does to the variables.
type varReach struct {
	ok bool
	// names are the variables the script may change; loose those it may
	// give a value that is not an integer; arith those arithmetic reads
	// or assigns; integer those the script declares integer.
	names, loose, arith, integer map[string]bool
	// calls are the builtins the script runs, and program whether it runs
	// a program (which may change the shell's limits, with prlimit).
	calls   map[string]bool
	program bool
}

// changedVars returns the variables script (f, parsed) can change when run
// in s, sorted, and the kinds of records of the dump it cannot change
// (scriptReach.same), or ok false when it cannot tell (see above). The
// caller has checked that s keeps its functions through f
// (keepsFunctions): the script runs no code but its own, and no builtin
// that could change the completions (complete) or enable a builtin.
func (s *SessionState) changedVars(f *syntax.File) (names, same []string, ok bool) {
	r := &varReach{ok: true, names: map[string]bool{}, loose: map[string]bool{}, arith: map[string]bool{}, integer: map[string]bool{}, calls: map[string]bool{}}
	syntax.Walk(f, func(node syntax.Node) bool {
		if r.ok {
			r.node(node)
		}
		return r.ok
	})
	if !r.ok {
		return nil, nil, false
	}
	vars := s.names().vars
	// xtrace expands PS4 before every command it traces, arithmetic and all.
	if r.names["PS4"] || strings.ContainsAny(vars["PS4"], "$`") {
		return nil, nil, false
	}
	for name := range r.arith {
		if r.loose[name] || !intValue(name, vars) {
			return nil, nil, false
		}
	}
	for name := range r.loose {
		// An integer variable evaluates what it is given.
		if r.integer[name] || strings.Contains(varFlags(name, vars), "i") {
			return nil, nil, false
		}
	}
	for _, name := range alwaysListed {
		r.names[name] = true
	}
	return slices.Sorted(maps.Keys(r.names)), r.same(s), true
}

// same returns the kinds of records of the dump the script cannot change:
// the completions; the traps (s has none, keepsFunctions refuses one,
// and the script cannot set one); the disabled builtins, when s has none
// (the dump enables those it runs); the aliases, unless it runs unalias
// (keepsCall refuses alias with a definition, and BASH_ALIASES); the
// umask, unless it runs umask; the limits, unless it runs ulimit or a
// program (prlimit); the hashed commands, unless it runs a program, hash
// or type, or changes PATH or BASH_CMDS. A script that may change an
// option changes none: the options change what the listings print (trap
// -p lists every signal in posix mode, hash -l says its table is empty
// under a compatNN option).
func (r *varReach) same(s *SessionState) []string {
	if r.calls["set"] || r.calls["shopt"] || r.names["POSIXLY_CORRECT"] || r.names["BASH_COMPAT"] || r.names["GLOBIGNORE"] {
		return nil
	}
	same := []string{"complete", "traps"}
	if !r.program && !r.calls["hash"] && !r.calls["type"] && !r.names["PATH"] && !r.names["BASH_CMDS"] {
		same = append(same, "hash")
	}
	if d := s.recordsOf("disabled"); len(d) == 1 && strings.TrimSpace(d[0].payload) == "" {
		same = append(same, "disabled")
	}
	for kind, builtin := range map[string]string{"aliases": "unalias", "umask": "umask", "limits": "ulimit"} {
		if !r.calls[builtin] && (kind != "limits" || !r.program) {
			same = append(same, kind)
		}
	}
	slices.Sort(same)
	return same
}

// varFlags returns the declare flags of variable name in a state's names
// (sessionNames.vars), "" for none.
func varFlags(name string, vars map[string]string) string {
	flags, _, _, _ := declareHead(vars[name])
	return flags
}

// intValue reports whether variable name holds a decimal integer or
// nothing in a state's names, so that arithmetic reading it reads no
// other variable.
func intValue(name string, vars map[string]string) bool {
	if intVolatile[name] {
		return true
	}
	if !namedVar(name) {
		return false // not in names: its value is not known here
	}
	v, ok := vars[name]
	if !ok {
		return true // unset
	}
	text, _, _ := strings.Cut(v, "\x00")
	flags, _, at, _ := declareHead(text)
	if strings.ContainsAny(flags, "aAn") {
		return false
	}
	if at < 0 {
		return true // declared, no value
	}
	value, ok := declareValue(text)
	return ok && decimal.MatchString(value)
}

// node reads one node of the script. An array's subscript is read as
// arithmetic, which it is for an indexed array (an associative array's key
// is a word, which reading it as arithmetic refuses more, never less).
func (r *varReach) node(node syntax.Node) {
	switch n := node.(type) {
	case *syntax.ArithmCmd:
		r.arithm(n.X)
	case *syntax.ArithmExp:
		r.arithm(n.X)
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			r.arithm(x)
		}
	case *syntax.CStyleLoop:
		r.arithm(n.Init)
		r.arithm(n.Cond)
		r.arithm(n.Post)
	case *syntax.DeclClause:
		r.decl(n)
	case *syntax.Assign:
		r.assign(n)
	case *syntax.ForClause:
		if n.Select {
			r.set("REPLY", true)
		}
	case *syntax.WordIter:
		r.set(n.Name.Value, true)
	case *syntax.Redirect:
		// {name}>file puts a descriptor's number in name.
		if n.N != nil && !decimal.MatchString(n.N.Value) {
			r.set(strings.Trim(n.N.Value, "{}"), false)
		}
	case *syntax.ParamExp:
		r.param(n)
	case *syntax.BinaryTest:
		r.binaryTest(n)
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
			w, ok := n.X.(*syntax.Word)
			r.ok = ok && identifier.MatchString(literal(w)) // a[x] evaluates x
		}
	case *syntax.CallExpr:
		r.call(n.Args)
	case *syntax.CoprocClause:
		r.ok = false
	}
}

// set notes that the script may change variable name, to a value that is
// not an integer when loose.
func (r *varReach) set(name string, loose bool) {
	if !identifier.MatchString(name) {
		r.ok = false
		return
	}
	r.names[name] = true
	if loose {
		r.loose[name] = true
	}
}

// assign reads an assignment: a command's prefix, or an argument of the
// declare family.
func (r *varReach) assign(a *syntax.Assign) {
	if a.Name == nil {
		return // an option of the declare family (keepsDecl read it)
	}
	name := a.Name.Value
	if a.Index != nil {
		r.arithm(a.Index)
	}
	switch {
	case a.Array != nil:
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				r.arithm(e.Index)
			}
		}
		r.set(name, true)
	case a.Naked:
		r.set(name, false) // declared: its value stays
	default:
		r.set(name, a.Append || !intWord(a.Value))
	}
}

// decl reads a declare family's words that are not assignments as written
// (assign reads those): its options, of which -i makes its names
// integers, and quoted assignments ("X=1"), which bash reads as it reads
// X=1.
func (r *varReach) decl(d *syntax.DeclClause) {
	if listsOnly(d.Variant.Value, d.Args) {
		return // declare -p "$v": it prints, and assigns nothing
	}
	integer := false
	var quoted []string
	for _, a := range d.Args {
		if !a.Naked || a.Value == nil {
			if a.Name != nil {
				quoted = append(quoted, a.Name.Value)
			}
			continue
		}
		w := literal(a.Value)
		switch {
		case strings.Contains(w, "["):
			r.ok = false // declare -p 'a[x]', declare 'a[x]=1'
			return
		case w != "" && (w[0] == '-' || w[0] == '+'):
			integer = integer || w[0] == '-' && strings.Contains(w, "i")
		default:
			name, _, _ := strings.Cut(w, "=")
			name = strings.TrimSuffix(name, "+")
			r.set(name, true)
			quoted = append(quoted, name)
		}
	}
	if integer {
		for _, name := range quoted {
			r.integer[name] = true
		}
	}
}

// call reads a simple command, whose name keepsFunctions read as a literal
// word: a builtin it allows, or a program, which changes no variable.
func (r *varReach) call(args []*syntax.Word) {
	if len(args) == 0 {
		return
	}
	name := literal(args[0])
	r.calls[name] = true
	if !slices.Contains(bashBuiltins, name) {
		r.program = true
		for _, v := range windowVars {
			r.set(v, true)
		}
	}
	switch name {
	case "set", "shopt":
		for _, v := range optionVars {
			r.set(v, true)
		}
	case "read":
		r.set("REPLY", true)
		r.named(args[1:], true)
	case "getopts":
		r.set("OPTIND", false)
		r.set("OPTARG", true)
		if len(args) > 2 {
			r.named(args[2:3], true)
		}
	case "unset":
		r.named(args[1:], false)
	case "test", "[":
		r.testArgs(args[1:])
	case "let", "declare", "typeset", "local", "export", "readonly":
		// Only as a quoted word is one a simple command: its arguments
		// are words, not assignments.
		r.ok = false
	}
}

// named reads the arguments of read, getopts or unset that name
// variables: each word that is not an option; a[x] evaluates x.
func (r *varReach) named(words []*syntax.Word, loose bool) {
	for _, w := range words {
		v := literal(w)
		switch {
		case strings.Contains(v, "["):
			r.ok = false
		case identifier.MatchString(v):
			r.set(v, loose)
		}
	}
}

// testArgs reads the arguments of test or [: only -v and -R read a
// subscript (test -v 'a[x]'), so an argument bash could take for one is
// refused: a literal -v or -R, or an expansion that is not the operand of
// a literal operator beside it.
func (r *varReach) testArgs(args []*syntax.Word) {
	op := func(i int) string {
		if i < 0 || i >= len(args) {
			return ""
		}
		return literal(args[i])
	}
	for i, w := range args {
		v := literal(w)
		if v == "-v" || v == "-R" {
			r.ok = false
			return
		}
		if v != "" {
			continue
		}
		if _, quoted := w.Parts[0].(*syntax.DblQuoted); len(w.Parts) != 1 || !quoted {
			r.ok = false // split into words, one of them could be -v
			return
		}
		before, after := op(i-1), op(i+1)
		if !(testOperator(before) || testBinary(after)) {
			r.ok = false
			return
		}
	}
}

// testOperator reports whether a literal word of test is an operator an
// operand may follow.
func testOperator(w string) bool {
	return len(w) > 1 && w[0] == '-' && w != "-v" && w != "-R" || testBinary(w) || w == "!"
}

// testBinary reports whether a literal word of test is a binary operator.
func testBinary(w string) bool {
	switch w {
	case "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a", "-o":
		return true
	}
	return false
}

// param reads a parameter expansion outside arithmetic: a subscript and a
// substring's bounds are arithmetic, ${name=word} assigns, and ${!name}
// reads the variable name holds, which may be an array's element.
func (r *varReach) param(p *syntax.ParamExp) {
	if p.Excl && p.Names == 0 && !allElements(p.Index) {
		r.ok = false
		return
	}
	if p.Index != nil && !allElements(p.Index) {
		r.arithm(p.Index)
	}
	if p.Slice != nil {
		r.arithm(p.Slice.Offset)
		r.arithm(p.Slice.Length)
	}
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && strings.Contains(literal(p.Exp.Word), "P") {
		r.ok = false // ${x@P} expands x as a prompt: $((y=1)) in it assigns y
		return
	}
	if p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) {
		if p.Index != nil || p.Param == nil {
			r.ok = false
			return
		}
		r.set(p.Param.Value, !intWord(p.Exp.Word))
	}
}

// allElements reports whether a subscript is @ or *.
func allElements(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	return ok && (literal(w) == "@" || literal(w) == "*")
}

// binaryTest reads [[ X op Y ]]: =~ sets BASH_REMATCH, and an arithmetic
// comparison evaluates both sides.
func (r *varReach) binaryTest(t *syntax.BinaryTest) {
	switch t.Op {
	case syntax.TsReMatch:
		r.set("BASH_REMATCH", true)
	case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
		for _, x := range []syntax.TestExpr{t.X, t.Y} {
			w, ok := x.(*syntax.Word)
			if !ok {
				r.ok = false
				return
			}
			r.arithWord(w)
		}
	}
}

// arithm reads an arithmetic expression: what it assigns, and what it
// reads the value of.
func (r *varReach) arithm(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.BinaryArithm:
		if arithAssignOps[x.Op] {
			r.arithTarget(x.X)
		} else {
			r.arithm(x.X)
		}
		r.arithm(x.Y)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			r.arithTarget(x.X)
		} else {
			r.arithm(x.X)
		}
	case *syntax.ParenArithm:
		r.arithm(x.X)
	case *syntax.Word:
		r.arithWord(x)
	default:
		r.ok = false
	}
}

// arithAssignOps are arithmetic's assignments.
var arithAssignOps = map[syntax.BinAritOperator]bool{
	syntax.Assgn: true, syntax.AddAssgn: true, syntax.SubAssgn: true, syntax.MulAssgn: true, syntax.QuoAssgn: true,
	syntax.RemAssgn: true, syntax.AndAssgn: true, syntax.OrAssgn: true, syntax.XorAssgn: true, syntax.ShlAssgn: true,
	syntax.ShrAssgn: true, syntax.AndBoolAssgn: true, syntax.OrBoolAssgn: true, syntax.XorBoolAssgn: true, syntax.PowAssgn: true,
}

// arithTarget reads the variable an arithmetic assignment changes: a name
// (an array's element is refused).
func (r *varReach) arithTarget(x syntax.ArithmExpr) {
	w, ok := x.(*syntax.Word)
	name := ""
	if ok && len(w.Parts) == 1 {
		if lit, ok := w.Parts[0].(*syntax.Lit); ok {
			name = lit.Value
		}
	}
	if !identifier.MatchString(name) {
		r.ok = false
		return
	}
	r.set(name, false)
	r.arith[name] = true
}

// arithWord reads an operand of arithmetic, whose text bash evaluates
// again as an expression: a number, a variable (whose value it
// evaluates), or one expansion that gives a number.
func (r *varReach) arithWord(w *syntax.Word) {
	if len(w.Parts) != 1 {
		r.ok = false
		return
	}
	part := w.Parts[0]
	if q, ok := part.(*syntax.DblQuoted); ok && len(q.Parts) == 1 {
		part = q.Parts[0]
	}
	switch p := part.(type) {
	case *syntax.Lit:
		switch {
		case identifier.MatchString(p.Value):
			r.arith[p.Value] = true
		case p.Value == "" || !decimal.MatchString(p.Value):
			r.ok = false
		}
	case *syntax.ArithmExp:
		// Read as a node of its own.
	case *syntax.ParamExp:
		r.arithParam(p)
	default:
		r.ok = false
	}
}

// arithParam reads an expansion inside arithmetic: its value is evaluated
// again, so it must be a number: a variable that holds one, a length,
// or a special parameter that is one.
func (r *varReach) arithParam(p *syntax.ParamExp) {
	if p.Param == nil || p.Excl || p.Slice != nil || p.Repl != nil || p.Names != 0 {
		r.ok = false
		return
	}
	if p.Length {
		return
	}
	if p.Index != nil {
		r.ok = false // an element, whose value is not known here
		return
	}
	name := p.Param.Value
	switch name {
	case "#", "?", "$", "!":
		return
	}
	if !identifier.MatchString(name) {
		r.ok = false // a positional parameter, $@, $-, $0, $_
		return
	}
	r.arith[name] = true
	if p.Exp == nil {
		return
	}
	switch p.Exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		if !intWord(p.Exp.Word) {
			r.ok = false
		}
	default:
		r.ok = false
	}
}

// intWord reports whether the value a word gives is an integer or nothing:
// a decimal number written out, or one $((...)).
func intWord(w *syntax.Word) bool {
	if w == nil || len(w.Parts) == 0 {
		return true
	}
	if len(w.Parts) != 1 {
		return false
	}
	part := w.Parts[0]
	if q, ok := part.(*syntax.DblQuoted); ok && len(q.Parts) == 1 {
		part = q.Parts[0]
	}
	switch p := part.(type) {
	case *syntax.Lit:
		return decimal.MatchString(p.Value)
	case *syntax.ArithmExp:
		return true
	}
	return false
}

// narrowListing is what a narrow listing (changedVars) read: the
// variables it could change, and of those, each one there is, by name, as
// declare -p prints it.
type narrowListing struct {
	names []string
	stmts map[string]string
}

// mergeVars returns the full declare -p listing of a state whose command
// listed only the variables names (changedVars) in some: prev's listing,
// each of names as some has it (or gone, when some has none of it), in
// the order declare -p prints them, by name; and what some holds. ok is
// false when there is no previous listing.
func mergeVars(prev *SessionState, names []string, some string) (merged string, n narrowListing, ok bool) {
	if prev == nil || names == nil {
		return "", n, false
	}
	prevVars := prev.recordsOf("vars")
	if len(prevVars) != 1 {
		return "", n, false
	}
	old, listed := listingStatements(prevVars[0].payload), listingStatements(some)
	n = narrowListing{names: names, stmts: map[string]string{}}
	// A statement that is not a declare is one bashVars leaves out too.
	for _, stmt := range listed {
		if _, name, _, ok := declareHead(stmt); ok && slices.Contains(names, name) {
			n.stmts[name] = stmt
		}
	}
	type named struct{ name, stmt string }
	all := make([]named, 0, len(old)+len(listed))
	for _, stmt := range old {
		if _, name, _, ok := declareHead(stmt); ok && !slices.Contains(names, name) {
			all = append(all, named{name, stmt})
		}
	}
	for name, stmt := range n.stmts {
		all = append(all, named{name, stmt})
	}
	slices.SortFunc(all, func(a, b named) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for _, v := range all {
		b.WriteString(v.stmt)
		b.WriteByte('\n')
	}
	return b.String(), n, true
}

// exports returns the environment of a state whose command listed only
// n's variables, from prev's: the environment as it was, but for n's
// variables, as sessionExports reads them. ok is false when a value
// cannot be read.
func (n narrowListing) exports(prev map[string]string) (map[string]string, bool) {
	env := maps.Clone(prev)
	for _, name := range n.names {
		delete(env, name)
		stmt, ok := n.stmts[name]
		if !ok {
			continue
		}
		value, exported, ok := exportedValue(name, stmt)
		if !ok {
			return nil, false
		}
		if exported {
			env[name] = value
		}
	}
	return env, true
}

// changes returns the variables of n that differ from prev's names
// (sessionNames.vars) in a state whose environment is final: the only
// ones that can.
func (n narrowListing) changes(prev map[string]string, final map[string]string) NameChanges {
	before, after := map[string]string{}, map[string]string{}
	for _, name := range n.names {
		if !namedVar(name) {
			continue
		}
		if v, ok := prev[name]; ok {
			before[name] = v
		}
		if stmt, ok := n.stmts[name]; ok {
			after[name] = stmt + "\x00" + final[name]
		}
	}
	return diffNames(before, after)
}
