package shellsnap

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// bashSkipped are the variables of bash's declare -p that a restore leaves
// alone, and why: the shell sets them itself, they change by themselves, they
// are read-only, or another step restores what they show.
var bashSkipped = map[string]string{
	"BASH_ARGC": "the shell's call stack", "BASH_ARGV": "the shell's call stack", "BASH_LINENO": "the shell's call stack",
	"BASH_SOURCE": "the shell's call stack", "FUNCNAME": "the shell's call stack", "BASH_SUBSHELL": "the shell's call stack",
	"BASH_COMMAND": "the command running", "BASH_EXECUTION_STRING": "the shell's -c string", "LINENO": "the line running",
	"BASHPID": "a process id", "PPID": "a process id (read-only)", "RANDOM": "random", "SRANDOM": "random",
	"SECONDS": "time", "EPOCHSECONDS": "time", "EPOCHREALTIME": "time", "HISTCMD": "the history's count", "PIPESTATUS": "the last pipeline",
	"BASHOPTS": "read-only: the shopt step", "SHELLOPTS": "read-only: the set -o step", "BASH_VERSINFO": "read-only",
	"EUID": "read-only", "UID": "read-only", "GROUPS": "the process's groups",
	"BASH_ALIASES": "the alias step", "BASH_CMDS": "the hash step", "DIRSTACK": "the directory step", "PWD": "the directory step",
	"BASH_ARGV0": "the $0 step", "SHLVL": "the shell counts it itself", "_": "the $_ step",
	"POSIXLY_CORRECT": "the options step (it is posix mode)", "BASH_COMPAT": "the options step (it changes behaviour)",
	"COMP_WORDBREAKS": "the shell's own: declaring it gives it its default value",
}

// bashStartupVars are the variables bash sets as it starts, whatever its
// environment, that a script may unset (the others of a fresh bash's
// declare -p are bashSkipped's, or read-only).
var bashStartupVars = []string{"BASH", "BASH_LOADABLES_PATH", "BASH_VERSION", "COMP_WORDBREAKS", "HOSTNAME", "HOSTTYPE",
	"IFS", "MACHTYPE", "OLDPWD", "OPTERR", "OPTIND", "OSTYPE", "PS4", "SHELL", "TERM"}

// bashReadOnlyOptions are shopt options no script can set.
var bashReadOnlyOptions = map[string]bool{"login_shell": true, "restricted_shell": true}

// bashLastOptions are set -o options that act on every command read after
// them, so the restore sets them last, where nothing of its own follows.
var bashLastOptions = []string{"xtrace", "verbose", "noexec", "onecmd"}

var (
	fnattrLine = regexp.MustCompile(`(?m)^declare -f([a-z]*) (.+)$`)
	limitLine  = regexp.MustCompile(`\(.*-([A-Za-z])\) (\S+)$`)
)

// bashPlan builds the restore of a bash capture's records. captureEnv is the
// environment the capture started with, final every variable its shell
// exported at the end and kept those the policy lets a snapshot set.
func bashPlan(recs []record, captureEnv, final, kept map[string]string) *restorePlan {
	p := &restorePlan{shell: "bash"}
	rs := byKind(recs)

	// The working directory and the directory stack first: cd sets OLDPWD,
	// which the environment step then sets as the profile left it.
	if cwd, ok := rs.one("cwd"); ok {
		p.add(step{code: `\builtin cd -- ` + quote(cwd) + ` >/dev/null 2>&1`})
	}
	if dirs := rs["dir"]; len(dirs) > 1 {
		for i := len(dirs) - 1; i >= 1; i-- {
			p.add(step{code: `\builtin pushd -n ` + quote(dirs[i].payload) + ` >/dev/null 2>&1`})
		}
	}

	vars := bashVars(rs)
	if len(vars) > 0 {
		// The variables bash sets as it starts go, but those of the
		// environment, which the environment step restores: the state's
		// come back below with their own attributes (declare keeps an
		// export it does not name), and one it lacks was unset. One the
		// restore leaves alone (bashSkipped) stays, unless it was unset.
		var unset []string
		for _, name := range bashStartupVars {
			_, env := final[name]
			_, has := vars[name]
			if _, skip := bashSkipped[name]; !env && !(skip && has) {
				unset = append(unset, name)
			}
		}
		p.add(step{code: `\builtin unset -v ` + strings.Join(unset, " ")})
	}
	exportSteps(p, captureEnv, final, kept, vars)
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		v := vars[name]
		if _, skip := bashSkipped[name]; skip || strings.HasPrefix(name, "__snapexec_") || exportedScalar(v, final) {
			continue
		}
		// declare itself, not \builtin declare: only the word declare makes
		// bash read name=(...) as an array assignment. No function or alias
		// can stand for it yet.
		code := bashVarCode(v.text, v.flags)
		if name == "BASH_XTRACEFD" {
			// Its descriptor is most often one the profile opened, which
			// the replay has not: bash then warns as it is assigned, and
			// traces to stderr, as it does with that descriptor closed.
			code = "{ " + code + "\n} 2>/dev/null"
		}
		p.add(step{kind: "variable", name: name, code: code})
	}

	for _, r := range rs["alias"] {
		p.add(step{kind: "alias", name: r.name, code: `\builtin alias -- ` + quote(r.name+"="+r.payload)})
	}
	if m, ok := rs.one("umask"); ok && m != "" {
		p.add(step{code: `\builtin umask ` + quote(strings.TrimSpace(m)) + ` 2>/dev/null`})
	}
	limitSteps(p, rs, limitLine)
	if h, ok := rs.one("hash"); ok {
		for line := range strings.SplitSeq(h, "\n") {
			if rest, ok := strings.CutPrefix(line, "builtin hash -p "); ok {
				p.add(step{code: `\builtin hash -p ` + rest + ` 2>/dev/null`})
			}
		}
	}
	if c, ok := rs.one("complete"); ok {
		for _, stmt := range statements(c) {
			f := strings.Fields(stmt)
			p.add(step{kind: "completion", name: f[len(f)-1], code: `\builtin ` + stmt})
		}
	}

	// Functions, with extglob on while bash reads them and posix mode off
	// (it refuses names such as my-fn); the options come after them.
	p.add(step{check: true, code: `\builtin shopt -s extglob; \builtin set +o posix`})
	fnSteps(p, rs, captureEnv, final)

	optionSteps(p, rs, vars, captureEnv, final, kept)
	if t, ok := rs.one("traps"); ok {
		for _, stmt := range statements(t) {
			// The capture's own DEBUG and RETURN traps name its variables.
			if !strings.Contains(stmt, "__snapexec_") {
				p.add(step{tail: true, late: true, code: `\builtin ` + stmt})
			}
		}
	}
	if d, ok := rs.one("disabled"); ok {
		var names []string
		for line := range strings.SplitSeq(d, "\n") {
			if name, ok := strings.CutPrefix(line, "enable -n "); ok {
				names = append(names, quote(name))
			}
		}
		if len(names) > 0 {
			p.add(step{tail: true, late: true, code: `\builtin enable -n ` + strings.Join(names, " ")})
		}
	}
	if _, ok := rs.one("args"); ok {
		code := `\builtin set --`
		for _, r := range rs["arg"] {
			code += " " + quote(r.payload)
		}
		p.add(step{tail: true, code: code})
	}
	if _, ok := rs.one("background"); ok {
		// The profile's last background job set $!, which only another
		// job can set again.
		p.add(step{tail: true, code: `\builtin : & \builtin wait "$!"`})
	}
	if a, ok := rs.one("argv0"); ok {
		p.add(step{tail: true, code: "BASH_ARGV0=" + quote(a)})
	}
	if u, ok := rs.one("underscore"); ok {
		p.underscore = &u
	}
	return p
}

// bashDefinitions returns the names the records of a bash capture define.
func bashDefinitions(recs []record) *Definitions {
	d := &Definitions{Functions: map[string]bool{}, Aliases: map[string]bool{}}
	for _, r := range recs {
		switch r.kind {
		case "fn", "fntype":
			d.Functions[r.name] = true
		case "alias":
			d.Aliases[r.name] = true
		case "shopts":
			d.ExpandAliases = slices.Contains(strings.Split(r.payload, ":"), "expand_aliases")
		case "traps":
			for _, stmt := range statements(r.payload) {
				d.Traps = d.Traps || !strings.Contains(stmt, "__snapexec_")
			}
		}
	}
	return d
}

// bashVar is one variable of a declare -p dump.
type bashVar struct {
	flags, text string
}

// bashVars reads the declare -p dump of a capture.
func bashVars(rs records) map[string]bashVar {
	vars := map[string]bashVar{}
	dump, ok := rs.one("vars")
	if !ok {
		return vars
	}
	for _, stmt := range listingStatements(dump) {
		if flags, name, _, ok := declareHead(stmt); ok {
			vars[name] = bashVar{flags: flags, text: stmt}
		}
	}
	return vars
}

// listingStatements splits a declare -p listing into its statements:
// declareStatements', or a full parse's when that cannot read it.
func listingStatements(text string) []string {
	if stmts, ok := declareStatements(text); ok {
		return stmts
	}
	return statements(text)
}

// declareStatements splits bash's own declare -p listing into its
// statements, as statements does, without parsing the whole: a full parse
// of a few hundred variables costs about half a millisecond, on every
// session command's answer. bash prints one variable a line, quoting its
// value (and an associative array's keys) in "..." or $'...', which holds
// any control character; ok is false for anything else (a line that is not
// a declare, a character a shell reads as syntax outside a quote, a quote
// left open), which the caller parses whole.
func declareStatements(text string) (stmts []string, ok bool) {
	const (
		plain = iota
		double
		ansi
	)
	state, start := plain, 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch state {
		case double:
			switch c {
			case '\\':
				i++
			case '"':
				state = plain
			case '$', '`':
				return nil, false // bash escapes them
			}
			continue
		case ansi:
			switch c {
			case '\\':
				i++
			case '\'':
				state = plain
			}
			continue
		}
		switch {
		case c == '\n':
			if !strings.HasPrefix(text[start:i], "declare -") {
				return nil, false
			}
			stmts = append(stmts, text[start:i])
			start = i + 1
		case c == '"':
			state = double
		case c == '$' && i+1 < len(text) && text[i+1] == '\'':
			state = ansi
			i++
		case !declarePlain[c]:
			return nil, false
		}
	}
	if state != plain {
		return nil, false
	}
	if start < len(text) {
		if !strings.HasPrefix(text[start:], "declare -") {
			return nil, false
		}
		stmts = append(stmts, text[start:])
	}
	return stmts, true
}

// declarePlain are the bytes declareStatements reads outside a quote: the
// ones bash prints there (names, attributes, an array's parentheses and
// subscripts, a key that needs no quote), none of them syntax that could
// end a statement or start an expansion.
var declarePlain = func() (set [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+.,/:@%^= ()[]") {
		set[c] = true
	}
	for c := 0x80; c < 0x100; c++ {
		set[c] = true // a key's letters in a UTF-8 locale
	}
	return set
}()

// declareHead reads the start of a statement of bash's declare -p
// listing, "declare -FLAGS NAME" then "=" or the end: the flags ("-x",
// "--"), the name, and where the value starts after the "=" (-1 for none).
// ok is false for any other statement.
func declareHead(stmt string) (flags, name string, value int, ok bool) {
	rest, ok := strings.CutPrefix(stmt, "declare -")
	if !ok {
		return "", "", 0, false
	}
	i := 0
	for i < len(rest) && (rest[i] == '-' || 'a' <= rest[i] && rest[i] <= 'z' || 'A' <= rest[i] && rest[i] <= 'Z') {
		i++
	}
	flags, rest = "-"+rest[:i], rest[i:]
	if rest, ok = strings.CutPrefix(rest, " "); !ok {
		return "", "", 0, false
	}
	end := strings.IndexAny(rest, "= \t\n\f\r")
	switch {
	case end == 0:
		return "", "", 0, false
	case end < 0:
		return flags, rest, -1, true
	case rest[end] != '=':
		return "", "", 0, false
	}
	return flags, rest[:end], len(stmt) - len(rest) + end + 1, true
}

// declareValue returns the value of a scalar's statement in bash's declare
// -p listing ("declare -x NAME=VALUE", VALUE as declare -p quotes it: "..."
// with \, \", \$ and \` escaped, or $'...'); ok is false for anything
// else.
func declareValue(stmt string) (value string, ok bool) {
	_, _, at, ok := declareHead(stmt)
	if !ok || at < 0 {
		return "", false
	}
	quoted := stmt[at:]
	var b strings.Builder
	switch {
	case strings.HasPrefix(quoted, "$'"):
		n, ok := ansiC(&b, quoted[2:])
		return b.String(), ok && 2+n == len(quoted)
	case len(quoted) >= 2 && quoted[0] == '"' && quoted[len(quoted)-1] == '"':
		body := quoted[1 : len(quoted)-1]
		for i := 0; i < len(body); i++ {
			c := body[i]
			switch {
			case c == '"' || c == '$' || c == '`':
				return "", false // bash escapes them
			case c == '\\' && i+1 < len(body) && strings.IndexByte("\\\"$`\n", body[i+1]) >= 0:
				if body[i+1] != '\n' {
					b.WriteByte(body[i+1])
				}
				i++
			case c == '\\' && i+1 == len(body):
				return "", false // it would escape the closing quote
			default:
				b.WriteByte(c)
			}
		}
		return b.String(), true
	}
	return "", false
}

// exportedScalar reports whether v is an exported variable with a value in
// the environment, which the environment step restores.
func exportedScalar(v bashVar, final map[string]string) bool {
	_, name, _, _ := declareHead(v.text)
	_, inEnv := final[name]
	return strings.Contains(v.flags, "x") && !strings.ContainsAny(v.flags, "aA") && inEnv
}

// exportSteps adds the environment's changes: one unset and one export (or
// declare, for a variable with attributes) for all of them, and the
// attributes the profile gave a variable whose value it kept.
func exportSteps(p *restorePlan, captureEnv, final, kept map[string]string, vars map[string]bashVar) {
	var unsets, exports []string
	for _, ch := range diffEnv(captureEnv, final, kept, bashSkipped) {
		if ch.op == envUnset {
			unsets = append(unsets, ch.name)
			continue
		}
		value := quote(ch.value)
		if ch.relative {
			value = quote(ch.prefix) + `"${` + ch.name + `-}"` + quote(ch.suffix)
		}
		if flags := extraFlags(vars[ch.name].flags); flags != "" {
			p.steps = append(p.steps, step{check: true, code: bashVarCode(`\builtin declare -x`+flags[1:]+" "+ch.name+"="+value, "-x"+flags[1:])})
			continue
		}
		exports = append(exports, ch.name+"="+value)
	}
	if len(unsets) > 0 {
		p.steps = append(p.steps, step{check: true, code: `\builtin unset -v ` + strings.Join(unsets, " ")})
	}
	if len(exports) > 0 {
		p.steps = append(p.steps, step{check: true, code: `\builtin export ` + strings.Join(exports, " ")})
	}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		v := vars[name]
		c, had := captureEnv[name]
		if flags := extraFlags(v.flags); flags != "" && had && final[name] == c && exportedScalar(v, final) {
			p.steps = append(p.steps, step{check: true, code: `\builtin declare ` + flags + " " + name})
		}
	}
}

// bashVarCode is the statement that restores a variable that stmt, a
// declare statement with the attributes flags, restores as bash printed it:
// stmt itself, but for a variable with an attribute that changes what is
// assigned to it (-i evaluates the value, -l, -u and -c change its case).
// A profile may have given it after the value, which the variable then
// keeps as it was; assigned with the attribute, the value would change, or
// be evaluated (an array index in it runs a command substitution). So the
// value is assigned without them, they come after it, and read-only after
// them. A name reference is left as it is.
func bashVarCode(stmt, flags string) string {
	if !strings.ContainsAny(flags, "iluc") || strings.Contains(flags, "n") {
		return stmt
	}
	head, rest, ok := strings.Cut(stmt, " -")
	if !ok {
		return stmt
	}
	_, rest, _ = strings.Cut(rest, " ") // the flags, which come again below
	var base, later []byte
	for _, f := range []byte(flags[1:]) {
		switch f {
		case 'i', 'l', 'u', 'c':
			later = append(later, f)
		case 'r', '-':
		default:
			base = append(base, f)
		}
	}
	if len(base) == 0 {
		base = []byte("-")
	}
	_, name, _, _ := declareHead("declare -" + string(base) + " " + rest)
	code := head + " -" + string(base) + " " + rest + `; \builtin declare -` + string(later) + " " + name
	if strings.Contains(flags, "r") {
		code += `; \builtin declare -r ` + name
	}
	return code
}

// extraFlags returns a variable's attributes other than export, as a
// declare option ("-ir"), or "".
func extraFlags(flags string) string {
	// Not a strings.Replacer, which would be built on every call: this runs
	// for every variable of every restore, a session command's included.
	f := strings.Map(func(r rune) rune {
		if r == '-' || r == 'x' {
			return -1
		}
		return r
	}, flags)
	if f == "" {
		return ""
	}
	return "-" + f
}

// limitSteps adds the ulimits the profile changed, soft and hard: the soft
// limit first and again after the hard one, so that a lower and a higher
// hard limit both apply. A limit the process may not set is left as it is.
func limitSteps(p *restorePlan, rs records, line *regexp.Regexp) {
	before, after := rs["limits0"], rs["limits"]
	if len(before) == 0 || len(after) == 0 {
		return
	}
	old, cur := limitsOf(before[0].payload, line), limitsOf(after[0].payload, line)
	for _, flag := range slices.Sorted(maps.Keys(cur)) {
		l := cur[flag]
		if old[flag] == l {
			continue
		}
		soft := `\builtin ulimit -S -` + flag + " " + l[0] + " 2>/dev/null"
		p.steps = append(p.steps, step{code: soft + `; \builtin ulimit -H -` + flag + " " + l[1] + " 2>/dev/null; " + soft})
	}
}

// limitsOf reads "ulimit -S -a; echo --; ulimit -H -a": each resource's
// option letter and its soft and hard values, as line finds them.
func limitsOf(text string, line *regexp.Regexp) map[string][2]string {
	soft, hard, _ := strings.Cut(text, "\n--\n")
	out := map[string][2]string{}
	for i, part := range []string{soft, hard} {
		for l := range strings.SplitSeq(part, "\n") {
			if m := line.FindStringSubmatch(l); m != nil {
				l := out[m[1]]
				l[i] = m[2]
				out[m[1]] = l
			}
		}
	}
	return out
}

// fnSteps adds the functions, each as "function NAME () { ... }" (bash
// prints "a=b () ", which it would read as an assignment), and their
// attributes. A function the request's environment exported, which the
// profile left as bash imported it and exported, is left to each request's
// environment. A function named builtin is defined last of
// all, so that the restore's own \builtin never calls it.
func fnSteps(p *restorePlan, rs records, captureEnv, final map[string]string) {
	attrs := map[string]string{}
	if listing, ok := rs.one("fnattrs"); ok {
		for _, m := range fnattrLine.FindAllStringSubmatch(listing, -1) {
			attrs[m[2]] = m[1]
		}
	}
	imported := map[string]string{}
	for _, r := range rs["fn0"] {
		imported[r.name] = r.payload
	}
	var after, builtin []step
	recs := append(slices.Clone(rs["fn"]), rs["fntype"]...)
	for _, r := range recs {
		envName := "BASH_FUNC_" + r.name + "%%"
		_, inCapture := captureEnv[envName]
		_, stillExported := final[envName]
		if old, ok := imported[r.name]; ok && inCapture && stillExported && strings.TrimSuffix(old, "\n") == strings.TrimSuffix(r.payload, "\n") && strings.Contains(attrs[r.name], "x") {
			// The request's own: each request's environment brings it, or not.
			continue
		}
		code := r.payload
		if r.kind == "fntype" {
			_, code, _ = strings.Cut(code, "\n") // "NAME is a function"
		}
		if !strings.HasPrefix(code, "function ") {
			code = "function " + code
		}
		// A function named builtin is defined last of all, after the
		// restore's own \builtin commands, and its attributes after it.
		prefix, list := `\builtin `, &after
		if r.name == "builtin" {
			prefix, list = `\command `, &builtin
			builtin = append(builtin, step{kind: "function", name: r.name, code: code})
		} else {
			p.steps = append(p.steps, step{kind: "function", name: r.name, code: code})
		}
		a := attrs[r.name]
		switch {
		case strings.Contains(a, "x"):
			*list = append(*list, step{code: prefix + `export -f -- ` + quote(r.name)})
		case inCapture:
			*list = append(*list, step{code: prefix + `export -nf -- ` + quote(r.name)})
		}
		if strings.Contains(a, "t") {
			*list = append(*list, step{code: prefix + `declare -ft -- ` + quote(r.name)})
		}
		if strings.Contains(a, "r") {
			*list = append(*list, step{code: prefix + `readonly -f -- ` + quote(r.name)})
		}
	}
	p.finally = builtin
	for name, body := range captureEnv {
		fn, ok := strings.CutPrefix(name, "BASH_FUNC_")
		fn, ok2 := strings.CutSuffix(fn, "%%")
		if _, still := final[name]; ok && ok2 && !still && body != "" && !slices.ContainsFunc(recs, func(r record) bool { return r.name == fn }) {
			p.steps = append(p.steps, step{code: `\builtin unset -f -- ` + quote(fn)})
		}
	}
	p.steps = append(p.steps, after...)
}

// optionSteps adds the shopt and set -o options, on and off, in that order
// (turning extdebug off turns errtrace and functrace off), with posix mode
// and BASH_COMPAT, which change what the shell does, and the export of
// SHELLOPTS and BASHOPTS. xtrace, verbose, noexec and onecmd are left to
// bashRender, which sets them last. captureEnv, final and kept are
// bashPlan's: an exported POSIXLY_CORRECT or BASH_COMPAT has its value
// there, not in the dump (bashDump empties exported variables).
func optionSteps(p *restorePlan, rs records, vars map[string]bashVar, captureEnv, final, kept map[string]string) {
	payload := func(kind string) string {
		text, _ := rs.one(kind)
		return text
	}
	shon := map[string]bool{}
	for _, name := range strings.Split(payload("shopts"), ":") {
		shon[name] = true
	}
	var s, u []string
	for _, name := range optionNames(payload("shoptnames")) {
		switch {
		case bashReadOnlyOptions[name], strings.HasPrefix(name, "compat"):
			// compatNN stand for BASH_COMPAT, restored as a variable.
			continue
		case shon[name]:
			s = append(s, name)
		default:
			u = append(u, name)
		}
		p.options++
	}
	if len(u) > 0 {
		p.steps = append(p.steps, step{tail: true, code: `\builtin shopt -u ` + strings.Join(u, " ")})
	}
	if len(s) > 0 {
		p.steps = append(p.steps, step{tail: true, code: `\builtin shopt -s ` + strings.Join(s, " ")})
	}
	on := map[string]bool{}
	for _, name := range strings.Split(payload("setopts"), ":") {
		on[name] = true
	}
	switch payload("functrace") {
	case "on":
		on["functrace"] = true
	case "unseen":
		// No command that could change functrace ran while the capture
		// watched; it watched to the end unless the profile set a DEBUG
		// trap of its own, after which functrace is as the profile left it
		// (on, unless it turned it off).
		on["functrace"] = on["functrace"] && userDebugTrap(payload("traps"))
	default:
		on["functrace"] = false
	}
	var set []string
	for _, name := range optionNames(payload("setnames")) {
		p.options++
		if slices.Contains(bashLastOptions, name) {
			continue
		}
		if on[name] {
			set = append(set, "-o", name)
		} else {
			set = append(set, "+o", name)
		}
	}
	if len(set) > 0 {
		p.steps = append(p.steps, step{tail: true, code: `\builtin set ` + strings.Join(set, " ")})
	}
	for _, name := range []string{"POSIXLY_CORRECT", "BASH_COMPAT"} {
		v, ok := vars[name]
		switch {
		case !ok:
		case !exportedScalar(v, final):
			p.steps = append(p.steps, step{tail: true, code: v.text})
		default:
			// The environment step leaves these to this one. One the
			// profile did not change is the request's, which the shell
			// read as it started; one the policy keeps out is not set.
			value, keep := kept[name]
			if c, had := captureEnv[name]; keep && (!had || c != final[name]) {
				p.steps = append(p.steps, step{tail: true, code: `\builtin declare ` + v.flags + " " + name + "=" + quote(value)})
			}
		}
	}
	if on["posix"] {
		// Posix mode turns these on (bash's posix_initialize), after the
		// shopt steps: they are set again as the state had them.
		var s, u []string
		for _, name := range optionNames(payload("shoptnames")) {
			switch name {
			case "expand_aliases", "inherit_errexit", "interactive_comments", "shift_verbose", "sourcepath":
				if shon[name] {
					s = append(s, name)
				} else {
					u = append(u, name)
				}
			}
		}
		if len(s) > 0 {
			p.steps = append(p.steps, step{tail: true, code: `\builtin shopt -s ` + strings.Join(s, " ")})
		}
		if len(u) > 0 {
			p.steps = append(p.steps, step{tail: true, code: `\builtin shopt -u ` + strings.Join(u, " ")})
		}
	}
	for _, name := range []string{"SHELLOPTS", "BASHOPTS"} {
		if strings.Contains(vars[name].flags, "x") {
			p.steps = append(p.steps, step{tail: true, code: `\builtin export ` + name})
		}
	}
	var last []string
	for _, name := range bashLastOptions {
		if on[name] {
			last = append(last, "-o", name)
		}
	}
	if len(last) > 0 {
		p.last = `\builtin set ` + strings.Join(last, " ")
	}
}

// userDebugTrap reports whether trap -p's listing has a DEBUG trap that is
// not the capture's own.
func userDebugTrap(traps string) bool {
	for _, stmt := range statements(traps) {
		if strings.HasSuffix(stmt, " DEBUG") && !strings.Contains(stmt, "__snapexec_") {
			return true
		}
	}
	return false
}

// optionNames returns the first word of each line of set -o or shopt.
func optionNames(listing string) []string {
	var names []string
	for line := range strings.SplitSeq(listing, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// statements splits shell text into its top-level statements' source text.
// Text bash printed (trap -p, complete -p) always parses; if it does not,
// nothing is restored from it. The parser reads UTF-8 only, so it reads a
// copy whose other bytes are '?' (the same offsets), and the statements are
// cut from text itself, bytes and all.
func statements(text string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(utf8Safe([]byte(text))), "")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(f.Stmts))
	for _, st := range f.Stmts {
		out = append(out, text[st.Pos().Offset():st.End().Offset()])
	}
	return out
}

// bashPrelude gives the user's BASH_ENV back: the replay's BASH_ENV names the
// restore file, and the request's own value, if any, comes in
// __SNAPEXEC_BASH_ENV.
const bashPrelude = `if [[ -n ${__SNAPEXEC_BASH_ENV+x} ]]; then BASH_ENV=$__SNAPEXEC_BASH_ENV; \builtin unset -v __SNAPEXEC_BASH_ENV; else \builtin unset -v BASH_ENV; fi
`

// bashSourceEnv runs the user's BASH_ENV as a non-interactive bash does after
// the profile: its value expanded as in double quotes, a missing file
// ignored, a name without a slash taken from the working directory.
const bashSourceEnv = `if [[ -n ${BASH_ENV-} && $BASH_ENV != *'"'* ]]; then if [[ $BASH_ENV == */* ]]; then \builtin eval "[[ ! -e \"$BASH_ENV\" ]] || . \"$BASH_ENV\""; else \builtin eval "[[ ! -e \"./$BASH_ENV\" ]] || . \"./$BASH_ENV\""; fi; fi
`

// bashRender writes the restore file of a bash plan. The steps that could
// be aliases once expand_aliases is back, the options, the traps and
// everything after them, are one compound command, read before any of it
// runs. The options that act on every later command come last, with $_ set
// as the profile left it by a command whose trace goes nowhere.
func bashRender(p *restorePlan) string {
	file, _ := bashRenderFor(p, false)
	return file
}

// bashStandbyRender writes the restore file of a standby shell of a bash
// plan (package standby), which restores the state before its command is
// known and then waits for the go-ahead: bashRender's file without the late
// steps, $_ and a function named builtin, which goAhead, one line that the
// go-ahead runs before the command, restores instead. ok is false when the
// plan sets options that act on every command (xtrace, verbose, noexec,
// onecmd): they would act on the wait, and only a fresh replay is exact; and
// when the state of recs stands for what the wait runs (standsForTheWait).
func bashStandbyRender(p *restorePlan, recs []record) (file, goAhead string, ok bool) {
	if p.last != "" || standsForTheWait(recs) {
		return "", "", false
	}
	file, goAhead = bashRenderFor(p, true)
	return file, goAhead, true
}

// standsForTheWait reports whether the bash state of recs defines what a
// standby's wait line (StandbyWaitLine) or go-ahead would run in place of
// the shell's own: a function named exec, which the line's \exec calls (a
// backslash keeps an alias from a word, not a function), or the go-ahead's
// variable (standbyScriptVar), whose attributes (-l, -u, -i, read-only, a
// name reference) would change or refuse the script assigned to it.
func standsForTheWait(recs []record) bool {
	for _, r := range recs {
		switch r.kind {
		case "fn", "fntype":
			if r.name == "exec" {
				return true
			}
		case "vars":
			if strings.Contains(r.payload, standbyScriptVar) {
				if _, ok := bashVars(records{"vars": {r}})[standbyScriptVar]; ok {
					return true
				}
			}
		}
	}
	return false
}

// bashRenderFor renders the restore file of p, for a replay or for a
// standby shell; a standby's go-ahead line comes with it.
func bashRenderFor(p *restorePlan, standby bool) (file, goAhead string) {
	var b strings.Builder
	b.WriteString(bashPrelude)
	for _, s := range p.steps {
		if !s.tail {
			b.WriteString(s.code + "\n")
		}
	}
	b.WriteString("{\n")
	var late []string
	for _, s := range p.steps {
		switch {
		case !s.tail:
		case standby && s.late:
			late = append(late, s.code)
		default:
			b.WriteString(s.code + "\n")
		}
	}
	b.WriteString(bashSourceEnv)
	var last []string
	if p.last != "" {
		last = append(last, p.last)
	}
	if p.underscore != nil && !standby {
		last = append(last, `\builtin : `+quote(*p.underscore))
	}
	switch {
	case p.last != "":
		b.WriteString("{ " + strings.Join(last, "; ") + "; } 2>/dev/null\n")
	case len(last) > 0:
		b.WriteString(last[0] + "\n")
	}
	var finally []string
	for _, s := range p.finally {
		if standby {
			finally = append(finally, s.code)
		} else {
			b.WriteString(s.code + "\n")
		}
	}
	b.WriteString("}\n")
	if !standby {
		return b.String(), ""
	}
	// One line, so that the command's first line is the go-ahead's eval's
	// first, as a replay's script is the first line of its -c string.
	// One eval: the late steps may disable eval itself (enable -n eval).
	var g strings.Builder
	if deferred := append(late, finally...); len(deferred) > 0 {
		g.WriteString(`\builtin eval -- ` + ansiQuote(strings.Join(deferred, "\n")) + "; ")
	}
	colon := `\builtin :`
	if len(finally) > 0 {
		// $_ is set after the eval (which sets it to its argument), once
		// a function named builtin is defined: so by ":" itself.
		colon = `\:`
	}
	if p.underscore != nil {
		g.WriteString(colon + " " + ansiQuote(*p.underscore) + "; ")
	}
	return b.String(), g.String()
}

// ansiQuote quotes s as one $'...' word of bash, which holds no newline or
// other control byte, so that it stays on one line.
func ansiQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// bashValidation is the script a bash runs (bash --noprofile --norc FILE) to
// check a plan's pieces.
func bashValidation(p *restorePlan) string {
	return p.validation("\\builtin set +o posix\n", func(i int, code string) string {
		return `\builtin eval -- ` + quote(code) + ` >/dev/null 2>&1 || \builtin printf 'F %d\n' ` + strconv.Itoa(i)
	})
}
