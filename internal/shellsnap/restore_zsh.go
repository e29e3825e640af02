package shellsnap

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// zshSkipped are the parameters a zsh restore leaves alone, and why (the
// capture already leaves out the read-only specials and the hidden views of
// zsh/parameter: functions, aliases, options, ...).
var zshSkipped = map[string]string{
	"RANDOM": "random", "SECONDS": "time", "EPOCHSECONDS": "time", "EPOCHREALTIME": "time", "epochtime": "time",
	"TRY_BLOCK_ERROR": "the running block", "TRY_BLOCK_INTERRUPT": "the running block", "pipestatus": "the last pipeline",
	"ERRNO": "the last error", "argv": "the arguments step", "0": "the shell's name", "_": "the last argument",
	"EUID": "the process's identity", "UID": "the process's identity", "EGID": "the process's identity",
	"GID": "the process's identity", "USERNAME": "the process's identity (assigning it changes user)",
	"SHLVL": "the shell counts it itself", "PWD": "the directory step",
	"ZSH_EXECUTION_STRING": "the shell's -c string", "ZSH_ARGZERO": "the shell's name", "ZSH_NAME": "the shell's name",
	"ZSH_VERSION": "the shell's own", "ZSH_PATCHLEVEL": "the shell's own", "TTY": "the terminal",
	"signals": "the shell's own",
}

// zshModuleParams are the parameters of modules that zsh loads when they
// are first used: they are restored only when the login shell had loaded
// the module.
var zshModuleParams = map[string]string{
	"watch": "zsh/watch", "WATCH": "zsh/watch", "WATCHFMT": "zsh/watch", "LOGCHECK": "zsh/watch",
}

// zshFixedOptions are options zsh refuses to change after start-up, and login,
// which a replay has as its login shell has it.
var zshFixedOptions = map[string]bool{
	"interactive": true, "login": true, "monitor": true, "onecmd": true, "shinstdin": true,
	"singlecommand": true, "stdin": true, "zle": true, "privileged": true, "restricted": true,
}

// zshTied are zsh's special arrays tied to a colon-separated scalar. Only the
// array is restored, by assignment (typeset -T would try to tie them again),
// and only when the scalar is not exported: then the environment step
// restores the scalar, and the array follows.
var zshTied = map[string]string{
	"path": "PATH", "cdpath": "CDPATH", "fpath": "FPATH", "manpath": "MANPATH", "mailpath": "MAILPATH",
	"module_path": "MODULE_PATH", "psvar": "PSVAR", "fignore": "FIGNORE",
}

var (
	zshLimitLine = regexp.MustCompile(`^-([A-Za-z]): .*\s(\S+)$`)
	// zshAutoloadStub is how functions prints a function marked for
	// autoload that is not loaded yet.
	zshAutoloadStub = regexp.MustCompile(`^(\S+) \(\) \{\n\t# undefined\n\tbuiltin autoload -X([A-Za-z]*)\n\}\n?$`)
	zshFloat        = regexp.MustCompile(`^(typeset|export|local)( -[a-zA-Z]*F[a-zA-Z]*) ([^=]+)=-?\d*\.(\d+)$`)
)

// zshPlan builds the restore of a zsh capture's records (see bashPlan). Its
// steps before the tail go to the restore's .zshenv; the tail to .zlogin.
// Everything after the functions is done by assigning zsh/parameter's
// arrays (aliases, options, argv), so that no function of the profile named
// like a builtin can stand in for it.
func zshPlan(recs []record, captureEnv, final, kept map[string]string) *restorePlan {
	p := &restorePlan{shell: "zsh"}
	rs := byKind(recs)
	if cwd, ok := rs.one("cwd"); ok {
		p.add(step{code: `\builtin cd -q -- ` + quote(cwd) + ` >/dev/null 2>&1`})
	}
	if _, ok := rs.one("dirs"); ok {
		var dirs []string
		for _, r := range rs["dir"] {
			dirs = append(dirs, quote(r.payload))
		}
		p.add(step{code: "dirstack=(" + strings.Join(dirs, " ") + ")"})
	}

	// The environment, then the other parameters.
	loaded := map[string]bool{}
	if m, ok := rs.one("modules"); ok {
		for _, stmt := range statements(m) {
			if f := strings.Fields(stmt); len(f) == 2 && f[0] == "zmodload" {
				loaded[f[1]] = true
			}
		}
	}
	vars := map[string]record{}
	for _, r := range rs["var"] {
		vars[r.name] = r
	}
	exported := map[string]bool{}
	for _, r := range rs["xvar"] {
		exported[r.name] = true
	}
	zdotdir := zshEnvSteps(p, captureEnv, final, kept, vars, exported)
	zshParamSteps(p, vars, exported, loaded)
	zshSettingSteps(p, rs)

	// The tail, in .zlogin: ZDOTDIR, then the functions, as zsh prints
	// them, read without aliases (zsh expanded the profile's aliases when
	// it first read them), then aliases, arguments, the emulation and
	// options.
	p.steps = append(p.steps, zdotdir...)
	p.add(step{tail: true, check: true, code: "options[aliases]=off"})
	zshDefinitionSteps(p, rs)
	if _, ok := rs.one("args"); ok {
		var args []string
		for _, r := range rs["arg"] {
			args = append(args, quote(r.payload))
		}
		p.add(step{tail: true, code: "argv=(" + strings.Join(args, " ") + ")"})
	}
	if e, ok := rs.one("emulation"); ok && strings.TrimSpace(e) != "zsh" {
		p.add(step{tail: true, code: `\builtin emulate ` + quote(strings.TrimSpace(e))})
	}
	disable := zshDisable(rs)
	if o, ok := rs.one("options"); ok {
		zshOptionSteps(p, o, loaded, disable)
	} else if disable != "" {
		p.add(step{tail: true, code: disable})
	}
	if u, ok := rs.one("underscore"); ok {
		p.underscore = &u
	}
	return p
}

// zshEnvSteps adds the steps that make the environment the profile's: what
// it unset, exported or changed, relative to what the replay starts with.
// The ZDOTDIR step is returned, for the tail: zsh reads ZDOTDIR to find
// .zlogin, so the profile's goes there.
func zshEnvSteps(p *restorePlan, captureEnv, final, kept map[string]string, vars map[string]record, exported map[string]bool) (zdotdir []step) {
	var unsets, exports []string
	for _, ch := range diffEnv(captureEnv, final, kept, zshSkipped) {
		if ch.name == "ZDOTDIR" {
			code := `\builtin unset ZDOTDIR`
			if ch.op == envSet {
				code = "ZDOTDIR=" + quote(ch.value) + "\n\\builtin export ZDOTDIR"
			}
			zdotdir = append(zdotdir, step{tail: true, code: code})
			continue
		}
		switch {
		case ch.op == envUnset:
			unsets = append(unsets, ch.name)
		case !exported[ch.name] && vars[ch.name].name != "":
			// An exported integer, float or read-only variable: its own
			// typeset line, value and attributes.
			_, text, _ := strings.Cut(strings.TrimSuffix(vars[ch.name].payload, "\n"), "\n")
			p.add(step{check: true, code: zshTypeset(text)})
		case ch.relative:
			exports = append(exports, ch.name+"="+quote(ch.prefix)+`"${`+ch.name+`-}"`+quote(ch.suffix))
		default:
			exports = append(exports, ch.name+"="+quote(ch.value))
		}
	}
	if len(unsets) > 0 {
		p.add(step{check: true, code: `\builtin unset -- ` + strings.Join(unsets, " ")})
	}
	// A scalar exported with no value (export X; typeset +x X under
	// allexport) is in no environment, yet set to the empty string and
	// exported: export without a value makes it so again.
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		_, inEnv := final[name]
		_, skip := zshSkipped[name]
		if !inEnv && !skip && !zshVolatile[name] && name != "ZDOTDIR" && diffable(name) {
			exports = append(exports, name)
		}
	}
	if len(exports) > 0 {
		p.add(step{check: true, code: `\builtin export ` + strings.Join(exports, " ")})
	}
	return zdotdir
}

// zshParamSteps adds the parameters that are not the environment's: arrays,
// associations, unexported scalars, and the special arrays tied to an
// unexported scalar.
func zshParamSteps(p *restorePlan, vars map[string]record, exported, loaded map[string]bool) {
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		r := vars[name]
		typ, text, _ := strings.Cut(strings.TrimSuffix(r.payload, "\n"), "\n")
		// ZDOTDIR is the .zlogin step's: zsh reads it to find .zlogin. An
		// exported scalar, integer or float is the environment step's; an
		// array marked for export (allexport) is in no environment.
		inEnv := strings.Contains(typ, "export") && !strings.HasPrefix(typ, "array") && !strings.HasPrefix(typ, "association")
		if _, skip := zshSkipped[name]; skip || name == "ZDOTDIR" || strings.HasPrefix(name, "__snapexec_") || inEnv {
			continue
		}
		if module, ok := zshModuleParams[name]; ok && !loaded[module] {
			// The capture's listing of the parameters loaded the module;
			// assigning one would load it in the replay.
			continue
		}
		if scalar, tied := zshTied[name]; tied {
			if strings.Contains(typ, "unique") {
				p.add(step{code: `\builtin typeset -U ` + name})
			}
			if exported[scalar] {
				continue
			}
			if _, value, ok := strings.Cut(text, name+"="); ok {
				p.add(step{kind: "variable", name: name, code: name + "=" + value})
			}
			continue
		}
		if strings.Contains(typ, "tied") && strings.Contains(typ, "array") || strings.Contains(typ, "special") && strings.Contains(typ, "tied") {
			continue // the other half of a tie restores it
		}
		p.add(step{kind: "variable", name: name, code: zshTypeset(text)})
	}
}

// zshSettingSteps adds the shell's settings before the tail: the umask,
// limits, modules, named directories, the command hash, zstyles and traps.
// The disabled builtins come last (zshDisable).
func zshSettingSteps(p *restorePlan, rs records) {
	if m, ok := rs.one("umask"); ok && strings.TrimSpace(m) != "" {
		p.add(step{code: `\builtin umask ` + quote(strings.TrimSpace(m)) + ` 2>/dev/null`})
	}
	limitSteps(p, rs, zshLimitLine)
	for _, kind := range []string{"modules", "nameddirs", "hash", "zstyles"} {
		if text, ok := rs.one(kind); ok {
			for _, stmt := range statements(text) {
				p.add(step{code: `\builtin ` + stmt + ` 2>/dev/null`})
			}
		}
	}
	if t, ok := rs.one("traps"); ok {
		for _, stmt := range statements(t) {
			// trap lists TRAPxxx functions too, which the functions restore.
			if strings.HasPrefix(stmt, "trap ") && !strings.Contains(stmt, "__snapexec_") {
				p.add(step{code: `\builtin ` + stmt})
			}
		}
	}
}

// zshDisable returns the command that disables the builtins of the
// state's disabled record, or "" for none.
func zshDisable(rs records) string {
	d, _ := rs.one("disabled")
	var names []string
	for _, name := range strings.Fields(d) {
		names = append(names, quote(name))
	}
	if len(names) == 0 {
		return ""
	}
	return `\builtin disable -- ` + strings.Join(names, " ")
}

// zshDefinitionSteps adds the tail's functions, as zsh printed them, and
// aliases of the three kinds.
func zshDefinitionSteps(p *restorePlan, rs records) {
	for _, r := range rs["fn"] {
		code := r.payload
		if m := zshAutoloadStub.FindStringSubmatch(code); m != nil && m[1] == r.name {
			// A function marked for autoload and not loaded yet: marked
			// again, not defined as its stub.
			code = `\builtin autoload -- ` + quote(r.name)
			if m[2] != "" {
				code = `\builtin autoload -` + m[2] + ` -- ` + quote(r.name)
			}
		}
		p.add(step{tail: true, kind: "function", name: r.name, code: code})
	}
	for _, kind := range []string{"alias", "galias", "salias"} {
		for _, r := range rs[kind] {
			// The subscript's (Q) takes the quotes off the name; neither +=
			// nor a quoted subscript does that for these arrays.
			p.add(step{tail: true, kind: "alias", name: r.name, code: kind + "es[${(Q):-" + quote(r.name) + "}]=" + quote(r.payload)})
		}
	}
}

// zshOptionSteps adds the tail's options, from setopt's listing o, but for
// those the plan's last lines set (p.last, which zshRender reads whole
// before it runs any of it, so that no alias of the state can stand for
// a word of it): aliases, which was off for the functions; allexport,
// which would export what the steps after it set (and a module's arrays as
// it is unloaded); and xtrace and verbose, which act on every command after
// them. Those lines also unload the modules the restore's own use of
// zsh/parameter (options, aliases), ulimit and zstyle loaded and the login
// shell had not.
//
// disable, when not empty, disables the builtins the state had disabled
// (zshDisable): it comes after every other command of the restore, which
// runs them through \builtin, before the options that would trace it.
func zshOptionSteps(p *restorePlan, o string, loaded map[string]bool, disable string) {
	var sets []string
	last := map[string]string{"aliases": "on", "allexport": "off", "xtrace": "off", "verbose": "off"}
	for line := range strings.SplitSeq(o, "\n") {
		name, state, _ := strings.Cut(line, " ")
		switch {
		case name == "" || zshFixedOptions[name]:
			continue
		case last[name] != "":
			last[name] = state
		default:
			sets = append(sets, "options["+name+"]="+state)
		}
		p.options++
	}
	if len(sets) > 0 {
		p.add(step{tail: true, code: strings.Join(sets, "\n")})
	}
	lines := []string{"options[aliases]=" + last["aliases"]}
	for _, module := range []string{"zsh/parameter", "zsh/rlimits", "zsh/zutil"} {
		if !loaded[module] {
			lines = append(lines, `\builtin zmodload -u `+module)
		}
	}
	if disable != "" {
		lines = append(lines, disable)
	}
	var final []string
	for _, name := range []string{"allexport", "xtrace", "verbose"} {
		if last[name] == "on" {
			final = append(final, name)
		}
	}
	if len(final) > 0 {
		lines = append(lines, `\builtin setopt `+strings.Join(final, " "))
	}
	p.last = strings.Join(lines, "\n")
}

// zshTypeset returns typeset -p's line for a variable as the restore runs it:
// a float's precision, which typeset -p leaves out, is its decimals' count.
func zshTypeset(text string) string {
	if m := zshFloat.FindStringSubmatch(text); m != nil {
		return m[1] + m[2] + " " + strconv.Itoa(len(m[4])) + " " + m[3] + text[strings.Index(text, "="):]
	}
	return text
}

// zshPrelude keeps the request's ZDOTDIR for .zlogin, and skips the system
// files that a login shell has already run for the profile.
const zshPrelude = `if (( ${+__SNAPEXEC_ZDOTDIR} )); then __snapexec_zdotdir=$__SNAPEXEC_ZDOTDIR; fi
\builtin unset __SNAPEXEC_ZDOTDIR
options[globalrcs]=off
`

// zshRender writes a zsh plan's two startup files: .zshenv, the restore up
// to the traps, and .zlogin, which zsh runs last: it gives ZDOTDIR back (the
// request's, then the profile's if it changed it), then the functions,
// aliases, arguments and options. Nothing after the first function is a
// command but emulate.
func zshRender(p *restorePlan) (zshenv, zlogin string) {
	var env, login strings.Builder
	env.WriteString(zshPrelude)
	for _, s := range p.steps {
		if !s.tail {
			env.WriteString(s.code + "\n")
		}
	}
	login.WriteString("if (( ${+__snapexec_zdotdir} )); then ZDOTDIR=$__snapexec_zdotdir; else \\builtin unset ZDOTDIR; fi\n")
	login.WriteString("\\builtin unset __snapexec_zdotdir\n")
	for _, s := range p.steps {
		if s.tail {
			login.WriteString(s.code + "\n")
		}
	}
	// The last lines are one command, read whole while aliases are still
	// off, its errors and trace nowhere; $_ is set last, by a command whose
	// trace goes nowhere either.
	var last []string
	if p.last != "" {
		last = append(last, p.last)
	}
	if p.underscore != nil {
		last = append(last, ": "+quote(*p.underscore))
	}
	if len(last) > 0 {
		login.WriteString("{\n" + strings.Join(last, "\n") + "\n} 2>/dev/null\n")
	}
	return env.String(), login.String()
}

// zshValidation is the script a zsh runs (zsh -f FILE) to check a plan's
// pieces. It ends by removing what of them zsh would run at its exit (the
// functions zshexit and TRAPEXIT, the hooks of zshexit_functions): a
// validation runs none of the profile's code. A function named TRAPxxx is
// the trap of its signal as soon as it is defined (TRAPZERR would run at
// each failed check, TRAPDEBUG before each command), so it is checked
// under another name (zshValidationTrap).
func zshValidation(p *restorePlan) string {
	return p.validation("", func(i int, code string) string {
		if s := p.steps[i]; s.kind == "function" && strings.HasPrefix(s.name, "TRAP") {
			if rest, ok := strings.CutPrefix(code, s.name+" "); ok {
				code = zshValidationTrap + s.name + " " + rest
			}
		}
		return `\builtin eval -- ` + quote(code) + ` >/dev/null 2>&1 || \builtin print "F ` + strconv.Itoa(i) + `"`
	}) + zshValidationEnd
}

// zshValidationTrap is the prefix of the name a validation checks a
// function named TRAPxxx under.
const zshValidationTrap = "__snapexec_check_"

// zshValidationEnd removes from a validation's shell what it would run at
// its exit. A read-only zshexit_functions cannot be unset (zsh would end
// the script there, and run the hooks): the functions it names go instead.
const zshValidationEnd = `{ \builtin unfunction zshexit; \builtin unfunction TRAPEXIT
if [[ ${(t)zshexit_functions} == *readonly* ]]; then \builtin unfunction -- "${zshexit_functions[@]}"; else \builtin unset zshexit_functions; fi; } 2>/dev/null
`

// zshDefinitions returns the names a zsh capture's records define: its
// functions, its aliases (global ones among them) and suffix aliases, and
// whether the aliases option is on. (Its traps are zshStandby's: a standby
// serves no state that sets one.)
func zshDefinitions(recs []record) *Definitions {
	d := &Definitions{Functions: map[string]bool{}, Aliases: map[string]bool{}, SuffixAliases: map[string]bool{}, ExpandAliases: true}
	for _, r := range recs {
		switch r.kind {
		case "fn":
			d.Functions[r.name] = true
		case "alias", "galias":
			d.Aliases[r.name] = true
		case "salias":
			d.SuffixAliases[r.name] = true
		case "options":
			d.ExpandAliases = !slices.Contains(strings.Split(r.payload, "\n"), "aliases off")
		}
	}
	return d
}

// zshStandby returns the line a standby shell of a zsh capture runs with
// its go-ahead right before the script, and whether a standby can serve
// the capture at all (docs/design/standby.md#zsh). A standby restores from
// the replay's own directory, and then runs the wait line
// (StandbyWaitLineZsh), so nothing of the state may act on the wait or on
// the eval that runs the script: no option that traces or stops commands
// (xtrace, verbose, sourcetrace, noexec), no trap (a DEBUG trap would run
// on the wait; a signal's or ZERR's would run its code, or call its
// function, without line numbers; and zsh skips the EXIT trap when a -c
// string ends in an error such as $((1/0)) or nounset's, but not when an
// eval does), no disabled builtin, no function
// named builtin or exec (the wait line's words) or command_not_found_handler
// (a function the script may call without naming it), and no parameter of
// the go-ahead's name (standsForTheWait, as for bash). The line sets
// evallineno back on when the state has it (the wait line turns it off) and
// $_ as the profile left it; under allexport it unexports SECONDS and
// ZSH_EXECUTION_STRING, which the go-ahead assigns. Every word is quoted,
// as in the wait line, so that no global alias of the state expands.
func zshStandby(recs []record) (goAhead string, ok bool) {
	options := map[string]string{}
	var underscore *string
	for _, r := range recs {
		switch r.kind {
		case "options":
			for line := range strings.SplitSeq(r.payload, "\n") {
				name, state, _ := strings.Cut(line, " ")
				options[name] = state
			}
		case "traps":
			for _, stmt := range statements(r.payload) {
				if strings.HasPrefix(stmt, "trap ") && !strings.Contains(stmt, "__snapexec_") {
					return "", false
				}
			}
		case "fn":
			if strings.HasPrefix(r.name, "TRAP") || r.name == "builtin" || r.name == "exec" || r.name == "command_not_found_handler" {
				return "", false
			}
		case "var", "xvar":
			// The go-ahead's variable: an attribute (-l, -u, -i) would
			// change the script assigned to it.
			if r.name == standbyScriptVar {
				return "", false
			}
		case "disabled":
			if strings.TrimSpace(r.payload) != "" {
				return "", false
			}
		case "underscore":
			underscore = &r.payload
		}
	}
	if underscore == nil || options["xtrace"] != "off" || options["verbose"] != "off" || options["sourcetrace"] != "off" || options["exec"] != "on" {
		return "", false
	}
	var g strings.Builder
	if options["allexport"] == "on" {
		g.WriteString(`\builtin \typeset \+x \SECONDS \ZSH_EXECUTION_STRING; `)
	}
	if options["evallineno"] == "on" {
		g.WriteString(`\builtin \setopt \evallineno; `)
	}
	g.WriteString(`\builtin \: ` + ansiQuote(*underscore) + "; ")
	return g.String(), true
}

// zshEnvTouched returns the names a zsh capture's restore touches: every
// parameter the profile left other than an exported scalar (which the
// dump names only: the environment step restores it), and every variable
// of either environment that the profile set, changed or unset.
func zshEnvTouched(recs []record, captureEnv, final map[string]string) map[string]bool {
	touched := map[string]bool{}
	for _, env := range []map[string]string{captureEnv, final} {
		for name := range env {
			c, inCapture := captureEnv[name]
			f, inFinal := final[name]
			if !inCapture || !inFinal || c != f {
				touched[name] = true
			}
		}
	}
	for _, r := range recs {
		if r.kind == "var" {
			touched[r.name] = true
		}
	}
	return touched
}
