package shellsnap

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// shSkipped are the variables of dash's set that a restore leaves alone,
// and why.
var shSkipped = map[string]string{
	"PPID": "a process id", "LINENO": "the line running", "PWD": "the directory step", "_": "the last argument",
}

// shLimitFlags maps the names dash's ulimit -a prints to their options.
var shLimitFlags = map[string]string{
	"time(seconds)": "t", "file(blocks)": "f", "data(kbytes)": "d", "stack(kbytes)": "s", "coredump(blocks)": "c",
	"memory(kbytes)": "m", "locked memory(kbytes)": "l", "process": "p", "nofiles": "n", "vmemory(kbytes)": "v",
	"locks": "w", "rtprio": "r",
}

// shNeverOptions are set -o options a replay never sets: they would stop
// it or cannot change after start-up.
var shNeverOptions = map[string]bool{"interactive": true, "monitor": true, "stdin": true, "noexec": true}

var (
	shAssign    = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=`)
	shLimitLine = regexp.MustCompile(`^(.*\S)\s+(\S+)$`)
	shOption    = regexp.MustCompile(`^set ([-+])o (\S+)$`)
)

// shPlan builds the restore of a sh capture's records (see bashPlan): the
// working directory, the profile's changes to the environment (diffEnv)
// around the request's own, the shell variables and which are read-only,
// the aliases, the umask, the limits, the traps, the functions
// (functions_sh.go), and the options last, so that errexit, nounset and
// xtrace act on the user's command only. The alias "." is the capture's
// own (shCapture). The steps after the aliases quote their first word, so
// that no alias of the profile stands for it.
func shPlan(recs []record, captureEnv, final, kept map[string]string) *restorePlan {
	p := &restorePlan{shell: "sh"}
	byKind := map[string]string{}
	for _, r := range recs {
		byKind[r.kind] = r.payload
	}
	add := func(code string) { p.steps = append(p.steps, step{code: code}) }
	if cwd, ok := byKind["cwd"]; ok {
		add(`cd -- ` + quote(cwd) + ` >/dev/null 2>&1`)
	}
	var unsets, exports []string
	for _, ch := range diffEnv(captureEnv, final, kept, shSkipped) {
		if ch.op == envUnset {
			unsets = append(unsets, ch.name)
			continue
		}
		value := quote(ch.value)
		if ch.relative {
			value = quote(ch.prefix) + `"${` + ch.name + `-}"` + quote(ch.suffix)
		}
		exports = append(exports, ch.name+"="+value)
	}
	if len(unsets) > 0 {
		add(`unset ` + strings.Join(unsets, " "))
	}
	if len(exports) > 0 {
		add(`export ` + strings.Join(exports, " "))
	}
	exported := map[string]bool{}
	for _, stmt := range shStatements(byKind["exports"]) {
		name := strings.TrimPrefix(stmt, "export ")
		if m := shAssign.FindStringSubmatch(name); m != nil {
			exported[m[1]] = true
			continue
		}
		// Exported without a value: the environment cannot carry it.
		exported[name] = true
		if _, skip := shSkipped[name]; !skip && identifier.MatchString(name) && !strings.HasPrefix(name, "__snapexec_") {
			add(`export ` + name)
		}
	}
	for _, stmt := range shStatements(byKind["vars"]) {
		m := shAssign.FindStringSubmatch(stmt)
		if m == nil || exported[m[1]] || strings.HasPrefix(m[1], "__snapexec_") {
			continue
		}
		if _, skip := shSkipped[m[1]]; !skip {
			p.steps = append(p.steps, step{kind: "variable", name: m[1], code: stmt})
		}
	}
	for _, stmt := range shStatements(byKind["readonly"]) {
		name := strings.TrimPrefix(stmt, "readonly ")
		if m := shAssign.FindStringSubmatch(name); m != nil {
			name = m[1]
		}
		if _, skip := shSkipped[name]; !skip && identifier.MatchString(name) {
			add(`readonly ` + name)
		}
	}
	for _, stmt := range shStatements(byKind["aliases"]) {
		if name, _, ok := strings.Cut(stmt, "="); ok && name != "." {
			p.steps = append(p.steps, step{kind: "alias", name: name, code: `alias ` + stmt})
		}
	}
	if m := strings.TrimSpace(byKind["umask"]); m != "" {
		add(`\umask ` + quote(m))
	}
	shLimitSteps(p, byKind["limits0"], byKind["limits"])
	for _, stmt := range shStatements(byKind["traps"]) {
		add(`\` + stmt)
	}
	if _, ok := byKind["args"]; ok {
		code := `\set --`
		for _, r := range recs {
			if r.kind == "arg" {
				code += " " + quote(r.payload)
			}
		}
		add(code)
	}
	if _, ok := byKind["background"]; ok {
		// Only another background job sets $! again.
		add(`\: & \wait "$!"`)
	}
	// The functions come after every regular builtin the restore calls
	// (alias, umask, ulimit, wait, cd), which a function of the profile
	// could stand for.
	fns, unrestored := shFunctionSteps(recs)
	p.steps = append(p.steps, fns...)
	p.unrestored = unrestored
	var last []string
	for line := range strings.SplitSeq(byKind["setopts"], "\n") {
		m := shOption.FindStringSubmatch(line)
		if m == nil || shNeverOptions[m[2]] {
			continue
		}
		p.options++
		if m[2] == "xtrace" || m[2] == "verbose" {
			// Off in a new shell; on, both on the restore's last line, which
			// neither traces nor echoes.
			if m[1] == "-" {
				last = append(last, "-o", m[2])
			}
			continue
		}
		add(`\` + line)
	}
	if len(last) > 0 {
		add(`\set ` + strings.Join(last, " "))
	}
	return p
}

// shLimitSteps adds the limits the profile changed (see limitSteps).
func shLimitSteps(p *restorePlan, before, after string) {
	read := func(text string) map[string][2]string {
		soft, hard, _ := strings.Cut(text, "\n--\n")
		out := map[string][2]string{}
		for i, part := range []string{soft, hard} {
			for line := range strings.SplitSeq(part, "\n") {
				if m := shLimitLine.FindStringSubmatch(line); m != nil && shLimitFlags[m[1]] != "" {
					l := out[shLimitFlags[m[1]]]
					l[i] = m[2]
					out[shLimitFlags[m[1]]] = l
				}
			}
		}
		return out
	}
	old, cur := read(before), read(after)
	for _, flag := range slices.Sorted(maps.Keys(cur)) {
		l := cur[flag]
		if old[flag] == l {
			continue
		}
		soft := `\ulimit -S -` + flag + " " + l[0] + " 2>/dev/null"
		p.steps = append(p.steps, step{code: soft + `; \ulimit -H -` + flag + " " + l[1] + " 2>/dev/null; " + soft})
	}
}

// shStatements splits text dash printed (set, export -p, trap, alias) into
// its statements; nothing if it does not parse.
func shStatements(text string) []string { return statements(text) }

// shValidation is the script a sh runs (sh FILE) to check a plan's pieces:
// command keeps a syntax error in one from ending dash, and printf is
// called through it, quoted, so that no function or alias a piece defined
// stands for it.
func shValidation(p *restorePlan) string {
	return p.validation("", func(i int, code string) string {
		return `\command eval ` + quote(code) + ` >/dev/null 2>&1 || \command printf 'F %d\n' ` + strconv.Itoa(i)
	})
}

// shRender writes the restore file of a sh plan.
func shRender(p *restorePlan) string {
	var b strings.Builder
	for steps := p.steps; len(steps) > 0; {
		if steps[0].line > 0 {
			steps = shRenderFunctions(&b, steps)
			continue
		}
		if steps[0].code != "" {
			b.WriteString(steps[0].code + "\n")
		}
		steps = steps[1:]
	}
	return b.String()
}
