package shellsnap

import (
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"weak"

	"mvdan.cc/sh/v3/syntax"
)

// Session commands (package session, docs/design/sessions.md): each command
// of a session is a fresh `bash --noprofile -lc SCRIPT` whose BASH_ENV
// restores the session's state, and which dumps its own state at its end
// with the capture's dump (bashDump) into a private file the server reads.
// The dump runs from the shell's EXIT trap (exit N, errexit, a syntax error,
// the end of the script) and, when the script parses, from a line after it
// as well, so that a script that replaces the EXIT trap still hands its
// state on when it ends normally. The user's own EXIT trap is carried beside
// the state, never installed: a persistent shell runs it only when the
// shell ends, which a session never does.

// Errors of a session command's end.
var (
	// ErrNoSessionState is a command that left no state: it was killed,
	// replaced the shell (exec), or replaced the session's EXIT trap and
	// then left by exit.
	ErrNoSessionState = errors.New("the command left no shell state")
	// ErrSessionStateTooLarge is a state larger than the session allows.
	ErrSessionStateTooLarge = errors.New("the shell state is larger than the session allows")
	// ErrSessionShell is a shell sessions do not support.
	ErrSessionShell = errors.New("sessions support bash and zsh only")
	// ErrNoSessionStandby is a session state no standby shell can serve
	// (SessionLaunch.Standby).
	ErrNoSessionStandby = errors.New("no standby shell serves this session state")
)

// SessionFiles holds the files of session commands in a private directory:
// the restore file of each state (it goes once the state is unreachable),
// and each command's start file, end script and dump (they go with the
// command). Close removes them all.
type SessionFiles struct {
	files restoreFiles
}

// NewSessionFiles returns the files of sessions' states, made beneath in
// (NewPrivateDirs); &SessionFiles{} makes them in the temporary directory.
func NewSessionFiles(in PrivateDirs) *SessionFiles {
	return &SessionFiles{files: restoreFiles{in: in}}
}

// Close removes every file.
func (f *SessionFiles) Close() { f.files.close() }

// SessionState is a session's bash state between two commands, as the last
// command's dump left it. It is never changed: a command makes a new one,
// so that a fork shares it.
type SessionState struct {
	shell  string // "bash" or "zsh"
	recs   []record
	final  map[string]string // every exported variable at the end
	base   map[string]string // the session's environment, which the restore changes into final
	limits string            // the limits a change is relative to
	cwd    string
	size   int
	// fns is declare -f's listing of the state's functions, which the next
	// dump compares its own with; nil when unknown.
	fns *fnListing
	// narrow is what the dump listed of the variables when it listed only
	// those the command could change (changedVars), and from the state
	// it started from, which holds the others.
	narrow *narrowListing
	from   weak.Pointer[SessionState]

	once    sync.Once
	restore string
	err     error
	// standby is the restore file of a standby shell of the state, and
	// goAhead the line its go-ahead runs before the script
	// (bashStandbyRender); standby is "" when no standby serves it.
	standby, goAhead string

	namesOnce sync.Once
	named     sessionNames

	listOnce sync.Once
	listed   SessionChanges // Changes(nil), what Names lists

	guardOnce sync.Once
	guard     fnGuard // what keepsFunctions reads of the state

	aliasOnce sync.Once
	openAlias bool // what aliasOpen reads of the state
}

// fnListing is a file holding a declare -f listing, shared by the states
// whose functions it lists: it goes once none of them is reachable.
type fnListing struct{ path string }

// Cwd is the state's working directory.
func (s *SessionState) Cwd() string { return s.cwd }

// Size is the dump's size in bytes.
func (s *SessionState) Size() int { return s.size }

// SessionLaunch is a session command to build.
type SessionLaunch struct {
	// Shell is the session's shell: bash or zsh (SessionShell).
	Shell Shell
	// Env is the session's environment: every command starts with it and
	// the restore changes it into the state's.
	Env map[string]string
	// Script is the user's command.
	Script string
	// State is the state to start from; nil for a session's first command,
	// which starts from Snapshot (the scope's, replayed) or, without one,
	// from a bare shell.
	State    *SessionState
	Snapshot *Snapshot
	// Standby builds a standby shell of State instead
	// (docs/design/sessions.md#standby-shells): a shell that restores
	// State now and waits for the go-ahead (SessionCommand.GoAhead), which
	// carries the script; Script is not used.
	Standby bool
}

// SessionCommand is one session command, built: what to run, and where its
// end state will be.
type SessionCommand struct {
	// Argv and Env are the command to run.
	Argv []string
	Env  map[string]string
	// Dir is the private directory the shell writes its end state in: a
	// command confined by a sandbox must be able to write there, and
	// nowhere else of the server's.
	Dir string

	shell string
	files *SessionFiles
	nonce string
	prev  *SessionState
	base  map[string]string
	start string // the BASH_ENV file
	// ends are bash's end scripts that list the functions and that keep
	// them (bashEnd.keep), "" for one not built; zsh's is the first. A
	// standby's go-ahead may write a third, which lists only the
	// variables its script can change (narrow, bashEnd.vars), from
	// keptEnd, what the second knows.
	ends    [3]string
	keptEnd bashEnd
	// narrow is what the script can change when its end script is narrow
	// (its vars not nil), which Finish reads the dump by.
	narrow  scriptReach
	out     string // the dump (in Dir)
	pre     string // the DEBUG and RETURN traps at the end (in Dir)
	tmp     string // the dump's scratch file (in Dir)
	fns     string // the dump's declare -f listing (in Dir)
	dump    string // the line that dumps the state, after the script
	goAhead string // a standby's: the state's line before the script
}

// Command builds l's command and writes its files.
func (f *SessionFiles) Command(l SessionLaunch) (*SessionCommand, error) {
	switch l.Shell.Name {
	case "zsh":
		if l.Standby {
			return nil, ErrNoSessionStandby // a zsh session runs each command fresh
		}
		return f.zshCommand(l)
	case "bash":
	default:
		return nil, ErrSessionShell
	}
	c := &SessionCommand{shell: "bash", files: f, nonce: randomToken(), prev: l.State, base: l.Env}
	restore, fnPrev := "", ""
	switch {
	case l.State != nil:
		path, err := l.State.restoreFile(f)
		if err != nil {
			return nil, err
		}
		restore, c.base = path, l.State.base
		if l.Standby {
			if _, set := c.base["SECONDS"]; set || l.State.standby == "" {
				// bash starts SECONDS from the environment, which the
				// go-ahead restarts from 0; a state that traces would
				// trace the wait.
				return nil, ErrNoSessionStandby
			}
			restore, c.goAhead = l.State.standby, l.State.goAhead
		}
		if l.State.fns != nil {
			fnPrev = l.State.fns.path
		}
	case l.Standby:
		return nil, ErrNoSessionStandby
	case l.Snapshot != nil && l.Snapshot.restore != "":
		restore = l.Snapshot.restore
	}
	// The end script that lists the functions, and the one that keeps
	// them (keepsFunctions): a fresh command's is one of them, a
	// standby's both when its state allows keeping them (the go-ahead
	// chooses).
	var reach scriptReach
	if !l.Standby {
		reach = l.State.reach(l.Script)
	}
	keep := reach.keepFns
	ends := [2]bool{!keep, keep}
	if l.Standby {
		ends = [2]bool{true, l.State.keepsFunctions("")}
	}
	// The files the shell writes are made here, 0600, so that the shell's
	// umask cannot make them unreadable and noclobber (>|) cannot refuse
	// them, in a directory of their own: the one a sandbox lets it write.
	// The dump's scratch files are written once each (bashSessionEnd).
	files := map[string]string{"dump": "", "pre": "", "tmp": ""}
	if ends[0] {
		files["tmp.f"], files["tmp.e"], files["fns"] = "", "", ""
	}
	var err error
	if c.Dir, err = f.files.scratchDir(files); err != nil {
		return nil, err
	}
	c.out, c.pre, c.tmp, c.fns = filepath.Join(c.Dir, "dump"), filepath.Join(c.Dir, "pre"), filepath.Join(c.Dir, "tmp"), filepath.Join(c.Dir, "fns")
	e := bashEnd{nonce: c.nonce, tmp: c.tmp, fnFile: c.fns, fnPrev: fnPrev, names: !l.State.carriesOptionNames(), env: "check"}
	for i, build := range ends {
		if !build {
			continue
		}
		e.keep = i == 1
		if e.keep {
			e.env = l.State.keptEnv()
			c.keptEnd = e
			if reach.vars != nil {
				e, c.narrow = e.narrowed(reach), reach
			}
		}
		if c.ends[i], err = f.files.scratchFile(bashSessionEnd(e)); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.dump = c.dumpLine(keep)
	// One compound command, which bash reads whole before the restore
	// runs: the restore's aliases (expand_aliases on, an alias named "{")
	// and verbose, which it sets, act on no line of the start file. What
	// the state's DEBUG and RETURN traps print as the restore sets them
	// and returns, and as the EXIT trap is set, goes nowhere: a persistent
	// shell runs no command between two.
	var start strings.Builder
	start.WriteString("{\n")
	if l.State != nil && l.State.cwd != "" {
		// A persistent shell stays in a directory that was removed; a new
		// one cannot start there, and says so.
		start.WriteString(`if [[ ! -d ` + quote(l.State.cwd) + ` ]]; then \builtin printf '%s: the session'\''s directory %s is gone: this command starts in %s\n' "${0##*/}" ` +
			quote(l.State.cwd) + ` "$PWD" >&2; fi` + "\n")
	}
	if restore == "" {
		// A session's first command without a snapshot: the user's
		// BASH_ENV runs now, once, as a persistent bash runs it as it
		// starts (a snapshot's restore runs it; a state's never again).
		// What it prints goes nowhere, as from a snapshot's restore.
		start.WriteString(bashPrelude + "{\n" + bashSourceEnv + "} >/dev/null 2>&1\n")
	} else {
		start.WriteString(`\builtin . ` + quote(restore) + " >/dev/null 2>&1\n")
	}
	if !l.Standby {
		start.WriteString("{ " + l.State.setTrap(quote(c.dump), "") + "; } >/dev/null 2>&1\n")
	}
	start.WriteString("}\n")
	if c.start, err = f.files.scratchFile(start.String()); err != nil {
		c.Close()
		return nil, err
	}

	env := sessionEnv(c.base, l.State, "BASH_ENV", userBashEnvVar, c.start)
	script := l.Script
	switch {
	case l.Standby:
		script = StandbyWaitLine
	case takesEndLine(script, l.State, l.Snapshot):
		script += "\n" + c.dump
	}
	c.Argv, c.Env = []string{l.Shell.Path, "--noprofile", "-lc", script}, env
	return c, nil
}

// SessionStandbyServes reports whether a standby shell of a session in
// state runs script exactly as the fresh command would: a script that
// takes the dump line after it (takesEndLine: in an eval a syntax error
// does not end the shell); that turns neither xtrace nor verbose on, which
// would trace the eval's nesting; and that fits one argument, as the fresh
// command needs.
func SessionStandbyServes(state *SessionState, script string) bool {
	return len(script) <= MaxSessionScript && !StandbyTraced(script) && takesEndLine(script, state, nil)
}

// MaxSessionScript is the longest script of a session command (a longer one
// is refused before anything runs): the fresh command's argument, the script
// and the dump line, must fit Linux's limit on one argument, 128 KiB.
const MaxSessionScript = 128<<10 - 1<<10

// GoAhead is the go-ahead of a standby's command (SessionLaunch.Standby)
// that runs script, which SessionStandbyServes: SECONDS restarts as it
// starts with a shell, BASH_EXECUTION_STRING becomes what the fresh
// command's -c string is, the part of the state that would have acted on
// the wait is restored, the session's EXIT trap is set (so that $_ is what
// the fresh command's line leaves, EXIT; in $'...', so that the script
// starts on the eval's first line), then the script and the dump
// line run, in one eval, the script's first line the eval's first. The
// trap is set by a simple command, which no alias of the state can stand
// for, with no group to hide its trace: a state with a standby traces
// nothing. argv is the fresh command's, which the process table shows.
func (c *SessionCommand) GoAhead(script string) (argv []string, message []byte) {
	reach := c.prev.reach(script)
	if reach.vars != nil && c.ends[1] != "" {
		if path, err := c.files.files.scratchFile(bashSessionEnd(c.keptEnd.narrowed(reach))); err == nil {
			c.ends[2], c.narrow = path, reach
		}
	}
	dump := c.dumpLine(reach.keepFns)
	script += "\n" + dump
	argv = append(c.Argv[:3:3], script)
	return argv, StandbyMessage("SECONDS=0; BASH_EXECUTION_STRING=" + ansiQuote(script) +
		"; \\builtin export -n SECONDS BASH_EXECUTION_STRING; " + c.goAhead + c.prev.setTrap(ansiQuote(dump), " 2>/dev/null") + "; " + script)
}

// dumpLine is the two lines that dump the state at the command's end,
// after the script and in the session's EXIT trap. bash reads an alias
// before a reserved word, and a function before a builtin, so the state's
// aliases and functions could stand for any word of a line that starts a
// group: the first line turns posix mode on (POSIXLY_CORRECT), in which
// bash reads a reserved word first and finds a special builtin (trap, .)
// before a function, for the second line, which bash reads only once the
// first has run. The first is an arithmetic command, which no alias can
// stand for and whose trace and DEBUG trap go nowhere with its
// redirections; its expansions keep the exit status, BASHOPTS before
// posix mode changed it (bashSessionEnd puts the options back) and
// whether POSIXLY_CORRECT was set, and evaluate to 1, so that it fails
// nothing (errexit, ERR). bash hides the DEBUG and RETURN traps from a
// sourced file (without functrace): the second line lists them into a
// file of their own, removes the DEBUG trap, so that it cannot act on the
// dump, and sources the end script. When keepFns says the script cannot
// change a function (keepsFunctions), it sources the end script that
// keeps them, and there is no DEBUG or RETURN trap to list: the state
// has no trap and the script cannot set one. The comments tell the
// session's own EXIT trap from the user's.
func (c *SessionCommand) dumpLine(keepFns bool) string {
	first := `(( __snapexec_status=$?, ${?/x/${__snapexec_bo0=$BASHOPTS}${__snapexec_pc0=${POSIXLY_CORRECT+1}}${POSIXLY_CORRECT=}}, 1 )) >/dev/null 2>&1 # __snapexec_end` + "\n"
	redirect := ` >|` + quote(c.out) + ` 2>/dev/null # __snapexec_end`
	if keepFns {
		end := c.ends[1]
		if c.ends[2] != "" {
			end = c.ends[2]
		}
		return first + `\. ` + quote(end) + redirect
	}
	return first + `{ \trap -p DEBUG RETURN >|` + quote(c.pre) + `; \trap - DEBUG; \. ` + quote(c.ends[0]) + `; }` + redirect
}

// setTrap sets the session's EXIT trap to dump (a quoted word) after s's
// restore, each command with redirect after it: the start file's, in a
// group whose trace goes nowhere should the state set xtrace, after the
// restore, which sets the state's traps (a standby's go-ahead sets it
// after the traps it restores, as the start file does). The trap builtin
// is called through \builtin, or \command when s has a function named
// builtin (and none named command), which the restore defines last; one
// that s disabled is enabled for it.
func (s *SessionState) setTrap(dump, redirect string) string {
	caller, disabled := `\builtin`, false
	if s != nil {
		builtin, command := false, false
		for _, r := range s.recs {
			switch r.kind {
			case "fn", "fntype":
				builtin, command = builtin || r.name == "builtin", command || r.name == "command"
			case "disabled":
				disabled = disabled || slices.Contains(strings.Split(r.payload, "\n"), "enable -n trap")
			}
		}
		if builtin && !command {
			caller = `\command`
		}
	}
	set := caller + ` trap -- ` + dump + ` EXIT` + redirect
	if disabled {
		return caller + ` enable trap` + redirect + "; " + set + "; " + caller + ` enable -n trap` + redirect
	}
	return set
}

// takesEndLine reports whether the dump can run as a line after script,
// run in state or, for a session's first command, snap: the script is
// whole bash syntax, so that the line cannot be read into a heredoc or a
// continued line of it, does not end in a backslash, which would join the
// line to the script's last, and no alias can leave its last line open
// (aliasCanOpenLine).
func takesEndLine(script string, state *SessionState, snap *Snapshot) bool {
	return wholeSyntax(script, syntax.LangBash) && !aliasCanOpenLine(script, syntax.LangBash, state, snap)
}

// readScratch reads a file a session command's shell wrote in the
// command's own directory, which the command may write too, and so may have
// replaced by anything: a symbolic link (to /dev/zero, whose read would
// never end, or to a file of the server's), a FIFO (whose open would
// block). Only a regular file is read, and at most limit bytes (negative:
// no bound; beyond it is ErrSessionStateTooLarge).
func readScratch(path string, limit int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, ErrNoSessionState
	}
	r := io.Reader(f)
	if limit >= 0 {
		r = io.LimitReader(f, int64(limit)+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if limit >= 0 && len(b) > limit {
		return nil, ErrSessionStateTooLarge
	}
	return b, nil
}

// bound is readScratch's limit of a state at most maxBytes long (zero: no
// bound).
func bound(maxBytes int) int {
	if maxBytes <= 0 {
		return -1
	}
	return maxBytes
}

// stateErr is the error of a state that could not be read: too large, or
// none.
func stateErr(err error) error {
	if errors.Is(err, ErrSessionStateTooLarge) {
		return err
	}
	return ErrNoSessionState
}

// maxTrapListing bounds the trap listing a dump leaves beside the state
// (readScratch): the traps are in the state as well, which its own bound
// holds.
const maxTrapListing = 4 << 20

// From is the state the command starts from; nil for a session's first.
func (c *SessionCommand) From() *SessionState { return c.prev }

// Close removes the command's files; its state, once Finish made it, has
// its own.
func (c *SessionCommand) Close() {
	for _, p := range []string{c.start, c.ends[0], c.ends[1], c.ends[2]} {
		if p != "" {
			os.RemoveAll(p) // zsh's start is a directory
		}
	}
	if c.Dir != "" {
		os.RemoveAll(c.Dir)
	}
}

// Finish reads the state the command dumped at its end: ErrNoSessionState
// when it dumped none, ErrSessionStateTooLarge when it is larger than
// maxBytes (zero: no bound). Only a command that ended by itself may be
// finished; the caller keeps the previous state for one that was killed.
func (c *SessionCommand) Finish(maxBytes int) (*SessionState, error) {
	if c.shell == "zsh" {
		return c.zshFinish(maxBytes)
	}
	// The dump leaves the environment in its scratch file (bashDump).
	out, err := readScratch(c.out, bound(maxBytes))
	if err != nil || len(out) == 0 {
		return nil, stateErr(err)
	}
	rest := -1
	if maxBytes > 0 {
		rest = maxBytes - len(out)
	}
	env, err := readScratch(c.tmp, rest)
	if err != nil {
		return nil, stateErr(err)
	}
	out = append(out, env...)
	_, recs, err := parseCapture(out, nil, c.nonce)
	if err != nil || recs == nil {
		return nil, ErrNoSessionState
	}
	narrow, grown, ok := c.mergeNarrow(recs)
	if !ok {
		return nil, ErrNoSessionState
	}
	var final map[string]string
	if narrow != nil {
		final, ok = narrow.exports(c.prev.final)
	} else {
		final, ok = sessionExports(out, c.base, recs)
	}
	if !ok {
		return nil, ErrNoSessionState
	}
	s := &SessionState{shell: "bash", final: final, base: c.base, size: len(out) + grown, narrow: narrow}
	for _, r := range recs {
		switch r.kind {
		case "fnsame", "fnkept":
			// The functions are the previous state's, and so is their
			// listing; kept (keepsFunctions), their attributes too.
			if c.prev == nil || c.prev.fns == nil {
				return nil, ErrNoSessionState
			}
			s.fns = c.prev.fns
			kinds := []string{"fn", "fntype"}
			if r.kind == "fnkept" {
				kinds = append(kinds, "fnattrs")
			}
			for _, fn := range c.prev.recordsOf(kinds...) {
				// They count in the state's size as if dumped again.
				s.size += len(fn.kind) + len(fn.name) + len(fn.payload)
				s.recs = append(s.recs, fn)
			}
			continue
		case "cwd":
			// The next command starts there (its process's directory and
			// PWD), so that no cd of the restore changes OLDPWD.
			s.cwd = r.payload
			continue
		case "aliases":
			aliases, ok := parseAliasList(r.payload)
			if !ok {
				return nil, ErrNoSessionState
			}
			s.recs = append(s.recs, aliases...)
			continue
		case "traps":
			r.payload = withHiddenTraps(withoutExitTrap(r.payload), c.pre)
		}
		s.recs = append(s.recs, r)
	}
	if narrow != nil {
		s.takeSame(c.prev, c.narrow.same)
	}
	if !s.addKnown(c.prev) {
		return nil, ErrNoSessionState
	}
	if maxBytes > 0 && s.size > maxBytes {
		return nil, ErrSessionStateTooLarge
	}
	if s.fns == nil {
		s.fns = c.files.keepListing(c.fns)
	}
	return s, nil
}

// mergeNarrow turns a narrow listing's varsome record in recs
// (changedVars), which holds the variables the script could change, into
// the full listing, the others as the previous state had them. It returns
// what the narrow listing read, nil for a full one, and how much longer
// the listing grew.
func (c *SessionCommand) mergeNarrow(recs []record) (narrow *narrowListing, grown int, ok bool) {
	for i, r := range recs {
		if r.kind == "varsome" {
			vars, n, ok := mergeVars(c.prev, c.narrow.vars, r.payload)
			if !ok {
				return nil, 0, false
			}
			grown, recs[i], narrow = len(vars)-len(r.payload), record{kind: "vars", payload: vars}, &n
		}
	}
	return narrow, grown, true
}

// takeSame gives s, whose command's narrow dump left out the records of
// the kinds same (scriptReach.same), prev's, and remembers prev as the
// state s's narrow listing is relative to (Changes).
func (s *SessionState) takeSame(prev *SessionState, same []string) {
	s.from = weak.Make(prev)
	for _, kind := range same {
		if kind == "aliases" {
			kind = "alias" // Finish turns the listing into one record each
		}
		for _, r := range prev.recordsOf(kind) {
			s.size += len(r.kind) + len(r.name) + len(r.payload)
			s.recs = append(s.recs, r)
		}
	}
}

// addKnown adds the records a session's dump leaves out (bashSessionEnd),
// from s's own records and prev's: functrace, which is on when the
// options say so (the dump watched no file that could turn it off); the
// limits a change is relative to, prev's (a first command's own, those it
// ended with); and the names of the options, prev's when the dump listed
// none. ok is false when one cannot be known.
func (s *SessionState) addKnown(prev *SessionState) (ok bool) {
	functrace, limits, listed := "unseen", "", map[string]bool{}
	for _, r := range s.recs {
		switch r.kind {
		case "setopts":
			if slices.Contains(strings.Split(r.payload, ":"), "functrace") {
				functrace = "on"
			}
		case "limits":
			limits, ok = r.payload, true
		case "setnames", "shoptnames":
			listed[r.kind] = true
		}
	}
	s.limits = limits
	if prev != nil {
		s.limits = prev.limits
	} else if !ok {
		return false
	}
	s.recs = append(s.recs, record{kind: "functrace", payload: functrace}, record{kind: "limits0", payload: s.limits})
	for _, kind := range []string{"setnames", "shoptnames"} {
		if listed[kind] {
			continue
		}
		var names []record
		if prev != nil {
			names = prev.recordsOf(kind)
		}
		if len(names) != 1 {
			return false
		}
		s.recs = append(s.recs, names[0])
		s.size += len(kind) + len(names[0].payload)
	}
	return true
}

// carriesOptionNames reports whether s holds the names of the set -o and
// shopt options, which the next command's dump then leaves out.
func (s *SessionState) carriesOptionNames() bool {
	if s == nil {
		return false
	}
	set, shopt := false, false
	for _, r := range s.recordsOf("setnames", "shoptnames") {
		set, shopt = set || r.kind == "setnames", shopt || r.kind == "shoptnames"
	}
	return set && shopt
}

// sessionExports returns the environment a session command's dump left
// (bashDump): env's, or the exported variables with a value, not arrays,
// as its declare -p listing in recs prints them, which lacks the variables
// of the environment that bash cannot name (neither identifiers nor
// exported functions), base's: bash passes them through unchanged. ok is
// false when the listing cannot be read.
func sessionExports(out []byte, base map[string]string, recs []record) (env map[string]string, ok bool) {
	env = exportsOf(out)
	if env["__snapexec_env"] != "declare" {
		return env, true
	}
	delete(env, "__snapexec_env")
	for name, v := range bashVars(byKind(recs)) {
		value, exported, ok := exportedValue(name, v.text)
		if !ok {
			return nil, false
		}
		if exported {
			env[name] = value
		}
	}
	for name, value := range base {
		if !identifier.MatchString(name) && !strings.HasPrefix(name, "BASH_FUNC_") {
			env[name] = value
		}
	}
	return env, true
}

// exportedValue returns the value the environment holds of variable name,
// whose statement of declare -p's listing is stmt: exported is false for
// a variable that is not in it (not exported, an array, a nameref, no
// value, the dump's own). ok is false when the value cannot be read.
func exportedValue(name, stmt string) (value string, exported, ok bool) {
	if flags, _, at, _ := declareHead(stmt); !strings.Contains(flags, "x") || strings.ContainsAny(flags, "aAn") || at < 0 || strings.HasPrefix(name, "__snapexec_") {
		return "", false, true
	}
	value, ok = declareValue(stmt)
	return value, ok, ok
}

// parseAliasList returns the alias records of alias -p's listing: one
// "alias NAME='VALUE'" a line ("alias -- NAME=..." for a name that starts
// with "-"), each ' of the value written '\” (a value of just ' is \').
// ok is false for anything else.
func parseAliasList(text string) (recs []record, ok bool) {
	for text != "" {
		rest, ok := strings.CutPrefix(text, "alias ")
		if !ok {
			return nil, false
		}
		rest, _ = strings.CutPrefix(rest, "-- ")
		name, rest, ok := strings.Cut(rest, "=")
		if !ok {
			return nil, false
		}
		// The value is a sequence of '...' and \' ('\'' for a ', \' alone for
		// a value that is just ').
		var value strings.Builder
		for rest != "" && rest[0] != '\n' {
			switch {
			case strings.HasPrefix(rest, `\'`):
				value.WriteByte('\'')
				rest = rest[2:]
			case rest[0] == '\'':
				end := strings.IndexByte(rest[1:], '\'')
				if end < 0 {
					return nil, false
				}
				value.WriteString(rest[1 : 1+end])
				rest = rest[2+end:]
			default:
				return nil, false
			}
		}
		if text, ok = strings.CutPrefix(rest, "\n"); !ok && rest != "" {
			return nil, false
		}
		recs = append(recs, record{kind: "alias", name: name, payload: value.String()})
	}
	return recs, true
}

// hasTrap reports whether s sets a trap on one of signals.
func (s *SessionState) hasTrap(signals ...string) bool {
	for _, r := range s.recs {
		if r.kind != "traps" {
			continue
		}
		for _, stmt := range statements(r.payload) {
			for _, sig := range signals {
				if strings.HasSuffix(stmt, " "+sig) {
					return true
				}
			}
		}
	}
	return false
}

// recordsOf returns s's records of the kinds given.
func (s *SessionState) recordsOf(kinds ...string) []record {
	var out []record
	for _, r := range s.recs {
		if slices.Contains(kinds, r.kind) {
			out = append(out, r)
		}
	}
	return out
}

// keepListing moves the declare -f listing at path (in a command's
// directory, which goes with the command) beside that directory, on the
// same file system, for the states that will share it; nil when it cannot.
func (f *SessionFiles) keepListing(path string) *fnListing {
	l := &fnListing{path: filepath.Join(filepath.Dir(filepath.Dir(path)), randomToken())}
	if os.Rename(path, l.path) != nil {
		return nil
	}
	runtime.AddCleanup(l, f.files.release, l.path)
	return l
}

// withoutExitTrap is a dump's trap -p listing without its EXIT trap: the
// session's own, or the user's, which belongs to the end of a persistent
// shell, never reached (design/sessions.md), so it is not installed again.
func withoutExitTrap(traps string) string {
	var kept []string
	for _, stmt := range statements(traps) {
		if !strings.HasSuffix(stmt, " EXIT") {
			kept = append(kept, stmt)
		}
	}
	return strings.Join(kept, "\n")
}

// withHiddenTraps adds the DEBUG and RETURN traps listed in the file pre
// to a dump's trap list, in place of any the list has. The file is listed
// in posix mode (dumpLine), where trap -p lists a signal without a trap
// as "trap -- - SIG": those are no traps.
func withHiddenTraps(traps, pre string) string {
	b, err := readScratch(pre, maxTrapListing)
	if err != nil {
		return traps
	}
	hidden := func(stmt string) bool {
		return strings.HasSuffix(stmt, " DEBUG") || strings.HasSuffix(stmt, " RETURN")
	}
	kept := slices.DeleteFunc(statements(traps), hidden)
	for _, stmt := range statements(string(b)) {
		if hidden(stmt) && !strings.HasPrefix(stmt, "trap -- - ") {
			kept = append(kept, stmt)
		}
	}
	return strings.Join(kept, "\n")
}

// restoreFile writes s's restore file on first use.
func (s *SessionState) restoreFile(f *SessionFiles) (string, error) {
	if s.shell == "zsh" {
		return s.zshRestoreDir(f)
	}
	s.once.Do(func() {
		plan := bashPlan(s.recs, s.base, s.final, filterEnv(s.final, nil))
		// The user's BASH_ENV ran at the session's start, as a persistent
		// shell runs it once.
		text := strings.Replace(bashRender(plan), bashSourceEnv, "", 1)
		if s.restore, s.err = f.files.write(text); s.err != nil {
			return
		}
		runtime.AddCleanup(s, f.files.release, s.restore)
		file, goAhead, ok := bashStandbyRender(plan, s.recs)
		if file = strings.Replace(file, bashSourceEnv, "", 1); !ok || s.hasTrap("DEBUG", "RETURN") {
			// A DEBUG or RETURN trap acts on the rest of a fresh command's
			// restore, which a standby's go-ahead does not run.
			return
		}
		s.standby, s.goAhead = s.restore, goAhead
		if file != text {
			// A standby only: a failure leaves the state without one.
			if path, err := f.files.write(file); err == nil {
				s.standby = path
				runtime.AddCleanup(s, f.files.release, path)
			} else {
				s.standby = ""
			}
		}
	})
	return s.restore, s.err
}

// bashEnd is what a session command's end script (bashSessionEnd) knows
// before the command runs.
type bashEnd struct {
	nonce string
	// tmp is the dump's scratch file, for the environment (tmp.f and
	// tmp.e beside it: compgen's and the environment check's listings);
	// fnFile the file for its declare -f listing, and fnPrev the listing
	// of the state it starts from ("" for none).
	tmp, fnFile, fnPrev string
	// keep says that the script cannot change a function
	// (keepsFunctions): the dump lists none and says fnkept.
	keep bool
	// names says to list the names of the set -o and shopt options: a
	// session's first command. They are the same for every command of
	// the session (one bash binary's), and Finish takes a later
	// command's from the state it started from.
	names bool
	// vars, when not nil, are the only variables the script can change
	// (changedVars): the dump lists those, in a varsome record, and Finish
	// takes the others from the state it started from; and same the
	// kinds of records it cannot change (scriptReach.same), which the
	// dump leaves out and Finish takes from that state too.
	vars, same []string
	// env is how the dump hands on the environment: "check" (below),
	// "env" (env -0: a function is exported) or "declare" (no function
	// is exported and no variable is a nameref, which keep tells from the
	// state: declare -p's exported variables are the environment).
	env string
}

// narrowed is e for a script that can change only what r says (its vars
// not nil): its dump lists those variables and leaves out r.same, and
// Finish takes the environment from the listing and the previous state's,
// never from env -0.
func (e bashEnd) narrowed(r scriptReach) bashEnd {
	e.vars, e.same, e.env = r.vars, r.same, "declare"
	return e
}

// bashSessionEnd is the end script of a session command, sourced by the
// dump line (dumpLine) with __snapexec_status set to the status the shell
// is leaving with. It leaves the posix mode the dump line turned on (a
// special builtin, read in posix mode), so that the options are as the
// script left them but for those posix mode changed, which it takes as
// they were (__snapexec_bo0; brought up to date when posix mode was on
// already, bashShoptsListed); dumps the state, as the capture's dump
// (bashDump) does for a state with no watch of sourced files, no
// parameters or $0 of its own to compare with, and no functions of the
// request's environment; and returns the status the shell ended with, so
// that the script's line after the user's ends the shell with the user's
// status: in posix mode again, where no function can stand for return.
//
// It runs on every command's path, so it runs few commands and forks
// none but env (with 200 functions in the state, a fork of the shell
// costs about as much as the rest of the dump), and bash parses it whole
// on every command, so it holds only what this command's dump runs (e.g.
// no function listing when e.keep): about 2 KB, parsed in some 35 µs.
// What Finish knows it leaves out: the limits a change is relative to
// (the state's), the names of the options (the state's), whether
// functrace is on (it is in the options). The traps are listed once the
// builtins are enabled, so that a disabled trap builtin lists them (and
// clears them: the EXIT trap must not dump twice), and in posix mode as
// the state had it, as the capture does; then SIGXFSZ is ignored, so that a
// file-size limit the script lowered below what the dump writes fails the
// writes (the state is not handed on) rather than kill the shell, whose
// status is the user's. The variables are printed last,
// by this shell, exported values and all, with POSIXLY_CORRECT, which
// turning posix mode off unsets, set again as it was; the aliases by one
// alias -p (an aliases record, which Finish turns into alias records),
// and the positional parameters and the directory stack by one printf
// each. What a builtin lists goes to the dump itself or, read back by
// the dump, to a scratch file of its own (a write over a file that holds
// data truncates it, which costs about a millisecond on ext4). The
// dump's own variables are left to the reader.
//
// The functions, unless e.keep, are listed once with declare -f into
// e.fnFile and compared with e.fnPrev: the same listing means the same
// functions (names and text: declare -f prints each as bash reads it
// back), and the dump says so in a fnsame record in place of one record
// per function, which in a state of 200 functions costs as much as the
// rest of the dump. With e.env "check", the environment is env -0's when
// a function is exported (bash exports it as BASH_FUNC_name%%, which the
// shell cannot print) or a variable is a nameref (bash exports the
// variable an exported one names), and otherwise the exported variables
// with a value, not arrays, as declare -p prints them: the scratch file
// then holds only a __snapexec_env=declare entry that says so, which
// e.env "declare" prints after the dump's NUL instead. The variables of
// the environment bash cannot name (not identifiers) are passed through
// unchanged, and the reader takes them from the environment the shell
// started with.
func bashSessionEnd(e bashEnd) string {
	var b strings.Builder
	disabled := `\n@NONCE@ disabled\n' "$SHELLOPTS" "$__snapexec_bo0"
\command set +T ` + bashDumpOptionsOff + `
\command enable -n
\command enable ` + bashDumpBuiltins
	traps := `\command printf '\n@NONCE@ traps\n'
\command trap -p
`
	if slices.Contains(e.same, "traps") {
		traps = "" // but the session's own EXIT trap, which it clears
	}
	if slices.Contains(e.same, "disabled") {
		disabled = `' "$SHELLOPTS" "$__snapexec_bo0"
\command set +T ` + bashDumpOptionsOff
	}
	b.WriteString(`if [[ -z $__snapexec_pc0 ]]; then \unset -v POSIXLY_CORRECT
else
` + bashShoptsListed + `__snapexec_bo0=$BASHOPTS
fi
\command shopt -u expand_aliases
\command printf '` + StateMarker + `\n@NONCE@ begin bash\n\n@NONCE@ setopts\n%s\n@NONCE@ shopts\n%s` + disabled + `
` + traps + `\command trap - ` + bashDumpTraps + `
\command trap '' XFSZ
__snapexec_pca=${POSIXLY_CORRECT+x${POSIXLY_CORRECT@a}} __snapexec_pcv=${POSIXLY_CORRECT-}
\command set +o posix
`)
	if e.names {
		b.WriteString(`\command printf '\n@NONCE@ setnames\n'
\command set -o
\command printf '\n@NONCE@ shoptnames\n'
\command shopt
`)
	}
	header := ""
	switch {
	case e.keep:
		header = `\n@NONCE@ fnkept\n`
	default:
		b.WriteString(`\command declare -f >|@FNFILE@
`)
		list := `\command printf '\n'
__snapexec_n=@NONCE@
\command compgen -A function >|@TMP@.f
\command mapfile -t __snapexec_fns <@TMP@.f
` + bashFnRecords + `\command printf '@NONCE@ fnattrs\n'
`
		if e.fnPrev == "" {
			b.WriteString(list)
		} else {
			b.WriteString(`if \command mapfile -d '' __snapexec_xs <@FNFILE@ && \command mapfile -d '' __snapexec_ys <@FNPREV@ && [[ ${__snapexec_xs[0]-} == "${__snapexec_ys[0]-}" ]]; then
  \command printf '\n@NONCE@ fnsame\n\n@NONCE@ fnattrs\n'
else
` + list + `fi
`)
		}
		// Their attributes, which a function's text does not show.
		b.WriteString(`\command declare -F
`)
	}
	// Each listing after its record's head, the heads of those left out
	// (e.same) with the next one's.
	for _, l := range bashEndListings {
		if slices.Contains(e.same, l.kind) {
			continue
		}
		b.WriteString(`\command printf '` + header + `\n@NONCE@ ` + l.kind + `\n'
` + l.list + "\n")
		header = ""
	}
	b.WriteString(`\command printf '` + header + `\n@NONCE@ cwd\n%s\n'"${1+@NONCE@ args\\n\\n}" "$PWD"
\command printf "${1+@NONCE@ arg\\n%s\\n}" "$@"
\command printf '@NONCE@ dir\n%s\n' "${DIRSTACK[@]}"
if [[ -n $__snapexec_pca ]]; then \command declare -g${__snapexec_pca#x} POSIXLY_CORRECT="$__snapexec_pcv"; fi
`)
	end := `\n@NONCE@ end\n\n\0`
	switch e.env {
	case "check":
		b.WriteString(`{ \command declare -Fx; \command declare -n; } >|@TMP@.e
if [[ -s @TMP@.e ]]; then \command /usr/bin/env -0 >|@TMP@
else \command printf '%s\0' __snapexec_env=declare >|@TMP@
fi
`)
	case "env":
		b.WriteString(`\command /usr/bin/env -0 >|@TMP@
`)
	default:
		end += `__snapexec_env=declare\0`
	}
	listing := `\command unset -v BASH_EXECUTION_STRING __snapexec_fns __snapexec_xs __snapexec_ys
\command printf '@NONCE@ vars\n'
\command declare -p`
	if e.vars != nil {
		listing = `\command printf '@NONCE@ varsome\n'
\command declare -p ` + strings.Join(e.vars, " ")
	}
	b.WriteString(listing + `
\command printf '` + end + `'
POSIXLY_CORRECT=
\return "$__snapexec_status"
`)
	return strings.NewReplacer("@NONCE@", e.nonce, "@TMP@", quote(e.tmp), "@FNFILE@", quote(e.fnFile), "@FNPREV@", quote(e.fnPrev)).Replace(b.String())
}

// bashEndListings are the listings of an end script (bashSessionEnd) that
// a narrow one leaves out when its script cannot change them
// (scriptReach.same), by the kind of their record.
var bashEndListings = []struct{ kind, list string }{
	{"umask", `\command umask`},
	{"limits", `\command ulimit -S -a
\command printf -- '--\n'
\command ulimit -H -a`},
	{"aliases", `\command alias -p`},
	{"complete", `\command complete -p`},
	{"hash", `\command hash -l`},
}

// SessionChanges are the names a command added, changed and removed.
type SessionChanges struct {
	Variables, Functions, Aliases NameChanges
}

// NameChanges are names, sorted, by what happened to them.
type NameChanges struct {
	Added, Changed, Removed []string
}

// Changes returns the names of the variables, functions and aliases that
// differ from prev to s (all of s's are added when prev is nil). The
// shell's own variables that a session does not carry are left out.
func (s *SessionState) Changes(prev *SessionState) SessionChanges {
	if s.narrow != nil && prev != nil && s.from.Value() == prev {
		// Only the variables listed can differ, and no function (a
		// narrow dump keeps them).
		before := prev.names()
		return SessionChanges{
			Variables: s.narrow.changes(before.vars, s.final),
			Aliases:   diffNames(before.aliases, s.aliasNames()),
		}
	}
	var before sessionNames
	if prev != nil {
		before = prev.names()
	}
	after := s.names()
	return SessionChanges{
		Variables: diffNames(before.vars, after.vars),
		Functions: diffNames(before.fns, after.fns),
		Aliases:   diffNames(before.aliases, after.aliases),
	}
}

// Names returns the names of s's variables, functions and aliases as a
// session lists them: Changes(nil)'s added, sorted and displayed, the
// shell's own variables left out. A state does not change, so they are
// worked out once, not on every look at its session; the slices are the
// caller's own.
func (s *SessionState) Names() (variables, functions, aliases []string) {
	s.listOnce.Do(func() { s.listed = s.Changes(nil) })
	return slices.Clone(s.listed.Variables.Added), slices.Clone(s.listed.Functions.Added), slices.Clone(s.listed.Aliases.Added)
}

// sessionNames are a state's names, each with what identifies its value.
type sessionNames struct {
	vars, fns, aliases map[string]string
}

// names returns s's names, read once.
func (s *SessionState) names() sessionNames {
	s.namesOnce.Do(func() { s.named = s.readNames() })
	return s.named
}

func (s *SessionState) readNames() sessionNames {
	if s.shell == "zsh" {
		return s.zshNames()
	}
	n := sessionNames{vars: map[string]string{}, fns: map[string]string{}, aliases: s.aliasNames()}
	for _, r := range s.recs {
		if r.kind == "fn" || r.kind == "fntype" {
			n.fns[r.name] = r.payload
		}
	}
	for name, v := range bashVars(byKind(s.recs)) {
		if !namedVar(name) {
			continue
		}
		// An exported variable's value is in the environment.
		n.vars[name] = v.text + "\x00" + s.final[name]
	}
	return n
}

// namedVar reports whether a session names variable name among its
// changes: not one of bash's own a session does not carry (bashSkipped),
// the dump's, or OLDPWD, which every cd changes.
func namedVar(name string) bool {
	_, skip := bashSkipped[name]
	return !skip && !strings.HasPrefix(name, "__snapexec_") && name != "OLDPWD"
}

// aliasNames returns s's aliases, each with its value.
func (s *SessionState) aliasNames() map[string]string {
	aliases := map[string]string{}
	for _, r := range s.recs {
		if r.kind == "alias" {
			aliases[r.name] = r.payload
		}
	}
	return aliases
}

// diffNames sorts only the names that changed: a state's hundreds of
// names, sorted on every command, cost more than the rest of Changes, and
// the answer waits for it.
func diffNames(before, after map[string]string) NameChanges {
	var added, changed, removed []string
	for name, v := range after {
		old, had := before[name]
		switch {
		case !had:
			added = append(added, name)
		case old != v:
			changed = append(changed, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			removed = append(removed, name)
		}
	}
	return NameChanges{Added: displayNames(added), Changed: displayNames(changed), Removed: displayNames(removed)}
}

// displayNames returns names sorted, each as displayName shows it; nil
// for none.
func displayNames(names []string) []string {
	slices.Sort(names)
	for i, name := range names {
		names[i] = displayName(name)
	}
	return names
}

// sessionEnv is the environment of a session command: base without the
// server's own variables, the shell's start variable (BASH_ENV, ZDOTDIR)
// naming start, the user's own value of it kept under userVar, and PWD
// naming the state's directory. A shell takes PWD when it names the
// directory it starts in: the logical path, symbolic links and all, as the
// state had it, with no cd that would change OLDPWD.
func sessionEnv(base map[string]string, state *SessionState, startVar, userVar, start string) map[string]string {
	env := maps.Clone(base)
	maps.DeleteFunc(env, func(name, _ string) bool { return strings.HasPrefix(name, internalEnvPrefix) })
	if v, ok := env[startVar]; ok {
		env[userVar] = v
	}
	env[startVar] = start
	if state != nil {
		env["PWD"] = state.cwd
	}
	return env
}
