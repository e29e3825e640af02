package shellsnap

import (
	"maps"
	"path/filepath"
	"runtime"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// zsh session commands (docs/design/sessions.md#zsh): each command is a
// fresh `zsh -lc SCRIPT` whose ZDOTDIR is a directory of the command's own,
// as a snapshot replay's names the snapshot's restore directory: its
// .zshenv runs the state's .zshenv (the environment, the parameters, the
// traps) and its .zlogin the state's .zlogin (ZDOTDIR given back, the
// functions, aliases and options), then sets the session's EXIT trap and
// zshexit hook. zsh has no BASH_ENV, and runs code at its end in two
// places, neither of which covers every end: the EXIT trap (not after an
// error such as NO_UNSET's, which leaves the shell with traps off) and the
// zshexit hook (not after errexit). So both dump, whichever comes first, and
// the dump is also the script's last line when the script parses, so that a
// script that replaces the EXIT trap and ends normally hands its state on.
// The dump is the capture's (zshDump).

// zshSessionHook names the zshexit hook function of a session command.
const zshSessionHook = "__snapexec_exit"

// zshCommand builds l's command (SessionFiles.Command) for zsh.
func (f *SessionFiles) zshCommand(l SessionLaunch) (*SessionCommand, error) {
	c := &SessionCommand{shell: "zsh", files: f, nonce: randomToken(), prev: l.State, base: l.Env}
	restore, limits := "", ""
	switch {
	case l.State != nil:
		dir, err := l.State.restoreFile(f)
		if err != nil {
			return nil, err
		}
		restore, limits, c.base = dir, l.State.limits, l.State.base
	case l.Snapshot != nil && l.Snapshot.restore != "":
		restore = l.Snapshot.restore
	}
	var err error
	// The files the shell writes exist before it starts, 0600, so that its
	// umask cannot make them unreadable, in the directory a sandbox lets it
	// write.
	if c.Dir, err = f.files.scratchDir(map[string]string{"dump": "", "pre": "", "tmp": ""}); err != nil {
		return nil, err
	}
	c.out, c.pre, c.tmp = filepath.Join(c.Dir, "dump"), filepath.Join(c.Dir, "pre"), filepath.Join(c.Dir, "tmp")
	if c.ends[0], err = f.files.scratchFile(zshSessionEnd(c.nonce, limits, c.tmp)); err != nil {
		c.Close()
		return nil, err
	}
	// The group's redirections come first: nothing of the dump, its trace
	// included, reaches the command's output, and >| writes over noclobber.
	// A DEBUG trap would run before each command of the dump, into its
	// records: the traps are listed into a file of their own (the DEBUG
	// trap is taken from there) and the DEBUG trap goes first. The
	// variables' names tell the session's EXIT trap from the user's.
	end := `\builtin trap >|` + quote(c.pre) + `; \builtin trap - DEBUG; \builtin . ` + quote(c.ends[0]) + `; } >|` + quote(c.out) + ` 2>/dev/null`
	dump := `{ __snapexec_status=$? __snapexec_u=$_; ` + end
	// zshexit runs in subshells too, which must not dump.
	hook := zshSessionHook + `() { __snapexec_status=$?; if (( ! ZSH_SUBSHELL )) && [[ -z ${__snapexec_done-} ]]; then { __snapexec_u=; ` + end + `; fi; }`
	zshenv, zlogin, debug := zshPrelude, zshBareLogin, ""
	if l.State != nil {
		debug = l.State.zshDebugTrap()
	}
	if restore != "" {
		// cd - goes to the directory the shell left last, which is not
		// OLDPWD once assigned: the shell leaves it once more.
		zshenv = `\builtin . ` + quote(filepath.Join(restore, ".zshenv")) + "\n" + zshOldpwd
		zlogin = `\builtin . ` + quote(filepath.Join(restore, ".zlogin")) + "\n"
	}
	// After the state's functions (a TRAPEXIT among them would replace the
	// trap), in a group whose trace goes nowhere should the state set
	// xtrace, on the line that sources the state's .zlogin, which verbose
	// (set last) does not echo; the state's DEBUG trap last of all, so that
	// it runs before the script's commands only.
	zlogin = strings.TrimSuffix(zlogin, "\n") + "; { " + hook + "; zshexit_functions+=(" + zshSessionHook + "); \\builtin trap -- " + quote(dump) + " EXIT; " + debug + "} 2>/dev/null\n"
	start, err := f.files.scratchDir(map[string]string{".zshenv": zshenv, ".zlogin": zlogin})
	if err != nil {
		c.Close()
		return nil, err
	}
	c.start = start

	env := sessionEnv(c.base, l.State, "ZDOTDIR", userZdotdirVar, c.start)
	script := l.Script
	if wholeSyntax(script, syntax.LangZsh) && !aliasCanOpenLine(script, syntax.LangZsh, l.State, l.Snapshot) {
		// A backslash last would join the line to the script's, and so
		// would an alias that leaves the last line open.
		script += "\n" + dump
	}
	c.Argv, c.Env = []string{l.Shell.Path, "-lc", script}, env
	return c, nil
}

// zshOldpwd makes OLDPWD the directory cd - goes to.
const zshOldpwd = `if [[ -n ${OLDPWD-} && $OLDPWD != "$PWD" ]]; then __snapexec_d=$PWD; \builtin cd -q -- "$OLDPWD" 2>/dev/null && \builtin cd -q -- "$__snapexec_d"; \builtin unset __snapexec_d; fi
`

// zshBareLogin is the .zlogin of a session's first command without a
// snapshot: the request's ZDOTDIR back, and the global startup files on, as
// a shell that read them has it (zshPrelude turned them off).
const zshBareLogin = `if (( ${+__snapexec_zdotdir} )); then ZDOTDIR=$__snapexec_zdotdir; else \builtin unset ZDOTDIR; fi
\builtin unset __snapexec_zdotdir
\builtin setopt globalrcs
`

// zshSessionEnd is the end script of a zsh session command, sourced with
// __snapexec_status set to the status the shell is leaving with and
// __snapexec_u to $_: it sets what zshDump expects (the cwd and parameters
// always recorded, no sourced files), takes the session's hook out of
// zshexit_functions, dumps, and then leaves nothing to run at the shell's
// end: the user's zshexit hooks, like the user's EXIT trap, belong to the
// end of a persistent shell, which a session never reaches.
func zshSessionEnd(nonce, limits, tmp string) string {
	limitsNow := `$(\builtin ulimit -S -a; \builtin print -r -- --; \builtin ulimit -H -a)`
	if limits != "" {
		limitsNow = quote(limits)
	}
	return `__snapexec_done=1
__snapexec_n=` + nonce + `
\builtin zmodload -L >|` + quote(tmp) + `
__snapexec_mods=$(<` + quote(tmp) + `)
__snapexec_pwd=
__snapexec_args=()
__snapexec_limits=` + limitsNow + `
__snapexec_srcs=()
if (( ${+zshexit_functions} )); then
  zshexit_functions=(${zshexit_functions:#` + zshSessionHook + `})
  if (( ! ${#zshexit_functions} )); then \builtin unset zshexit_functions; fi
fi
` + zshDump + `\builtin unset zshexit_functions
\builtin unfunction zshexit 2>/dev/null
\builtin return $__snapexec_status
`
}

// zshFinish reads a zsh command's end state (SessionCommand.Finish).
func (c *SessionCommand) zshFinish(maxBytes int) (*SessionState, error) {
	out, err := readScratch(c.out, bound(maxBytes))
	if err != nil || len(out) == 0 {
		return nil, stateErr(err)
	}
	_, recs, err := parseCapture(out, nil, c.nonce)
	if err != nil || recs == nil {
		return nil, ErrNoSessionState
	}
	final := exportsOf(out)
	// allexport exports the dump's own variables.
	maps.DeleteFunc(final, func(name, _ string) bool { return strings.HasPrefix(name, "__snapexec_") })
	s := &SessionState{shell: "zsh", final: final, base: c.base, size: len(out)}
	for _, r := range recs {
		switch r.kind {
		case "cwd":
			// The next command starts there (its directory and PWD).
			s.cwd = r.payload
			continue
		case "file":
			continue
		case "fn":
			if strings.HasPrefix(r.name, "__snapexec_") {
				continue
			}
			if r.name == "TRAPEXIT" {
				// The user's EXIT trap, as a function: not installed
				// again, as the other form is not (zshSplitTraps).
				continue
			}
		case "limits0":
			s.limits = r.payload
		case "traps":
			var debug string
			r.payload, debug = zshSplitTraps(r.payload, c.pre)
			if debug != "" {
				s.recs = append(s.recs, record{kind: "zshdebug", payload: debug})
			}
		}
		s.recs = append(s.recs, r)
	}
	return s, nil
}

// zshSplitTraps takes the EXIT trap and the DEBUG trap out of a zsh
// dump's trap listing, as withoutExitTrap does for bash: the EXIT trap,
// the session's or the user's, is not installed again; the DEBUG trap is
// the one listed in the file pre before the dump removed it (a TRAPDEBUG
// function included: removing the trap removed it), as the code that sets
// it last in the next command (zshCommand). Only the trap lines are read
// (zsh quotes a newline in one); the TRAPxxx functions the listing shows
// too are the functions'.
func zshSplitTraps(traps, pre string) (rest, debug string) {
	lines := func(text string) []string {
		var out []string
		for line := range strings.SplitSeq(text, "\n") {
			if strings.HasPrefix(line, "trap ") {
				out = append(out, line)
			}
		}
		return out
	}
	var kept []string
	for _, stmt := range lines(traps) {
		if !strings.HasSuffix(stmt, " EXIT") && !strings.HasSuffix(stmt, " DEBUG") {
			kept = append(kept, stmt)
		}
	}
	if b, err := readScratch(pre, maxTrapListing); err == nil {
		for _, stmt := range lines(string(b)) {
			if strings.HasSuffix(stmt, " DEBUG") {
				debug = `\builtin ` + stmt + "; "
			}
		}
		if _, fn, ok := strings.Cut("\n"+string(b), "\nTRAPDEBUG () {\n"); ok {
			if body, _, ok := strings.Cut(fn, "\n}\n"); ok {
				debug = "TRAPDEBUG () {\n" + body + "\n}\n"
			}
		}
	}
	return strings.Join(kept, "\n"), debug
}

// zshDebugTrap is the code that sets the state's DEBUG trap (trap's or a
// TRAPDEBUG function), or "".
func (s *SessionState) zshDebugTrap() string {
	for _, r := range s.recs {
		if r.kind == "zshdebug" {
			return r.payload
		}
	}
	return ""
}

// zshRestoreDir writes s's restore directory (a .zshenv and a .zlogin, as
// a snapshot's) on first use.
func (s *SessionState) zshRestoreDir(f *SessionFiles) (string, error) {
	s.once.Do(func() {
		zshenv, zlogin := zshRender(zshPlan(s.recs, s.base, s.final, filterEnv(s.final, nil)))
		s.restore, s.err = f.files.writeDir(map[string]string{".zshenv": zshenv, ".zlogin": zlogin})
		if s.err == nil {
			runtime.AddCleanup(s, f.files.release, s.restore)
		}
	})
	return s.restore, s.err
}

// zshVolatile are zsh's parameters that change by themselves or with each
// command and process, beyond those a restore skips (zshSkipped): a state's
// names leave them out.
var zshVolatile = map[string]bool{
	"LINENO": true, "ZSH_SUBSHELL": true, "zsh_eval_context": true, "ZSH_EVAL_CONTEXT": true,
	"funcstack": true, "funcfiletrace": true, "funcsourcetrace": true, "functrace": true,
	"HISTCMD": true, "PPID": true, "status": true, "TTYIDLE": true, "LINES": true, "COLUMNS": true,
	"OLDPWD": true, "dirstack": true, "history": true, "historywords": true,
}

// zshNames returns the names of a zsh state (SessionState.names).
func (s *SessionState) zshNames() sessionNames {
	n := sessionNames{vars: map[string]string{}, fns: map[string]string{}, aliases: map[string]string{}}
	for _, r := range s.recs {
		switch r.kind {
		case "fn":
			n.fns[r.name] = r.payload
		case "alias", "galias", "salias":
			n.aliases[r.name] = r.kind + "\x00" + r.payload
		case "var", "xvar":
			_, skip := zshSkipped[r.name]
			if skip || zshVolatile[r.name] || strings.HasPrefix(r.name, "__snapexec_") {
				continue
			}
			// An exported variable's value is in the environment.
			n.vars[r.name] = r.payload + "\x00" + s.final[r.name]
		}
	}
	return n
}
