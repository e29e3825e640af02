package shellsnap

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// What a standby shell (package standby) reads of a snapshot: the names its
// state defines, its standby restore file and go-ahead line.

// StandbyReady reports whether a standby shell of shell ("bash" or "zsh")
// can serve s: s is a snapshot of that shell, its state is restored from a
// file, and sets no option that would act on the standby's wait (xtrace,
// verbose, noexec, onecmd; zsh: zshStandby).
func (s *Snapshot) StandbyReady(shell string) bool {
	return s.standby != "" && s.zsh == (shell == "zsh")
}

// ForStandby returns a copy of s that a standby shell restores: Replay of
// the copy restores s from the standby's restore file, which leaves the
// traps, disabled builtins and $_ to GoAhead's line. It defines the same
// names as s.
func (s *Snapshot) ForStandby() *Snapshot {
	c := *s
	c.restore = s.standby
	return &c
}

// GoAhead is the line a standby shell of s runs, with its go-ahead, right
// before script, for a launch whose environment (before Replay) is env:
// the variables of env that PassedThrough names, which the standby started
// without, are exported as bash would have imported them,
// BASH_EXECUTION_STRING becomes script, as in a replay, and the part of the
// state that would have acted on the wait is restored. It is one line,
// ending in "; ", so that the script's line numbers are a replay's.
//
// For zsh it sets ZSH_EXECUTION_STRING instead, and then what zshStandby
// left to it: the options the wait line changed, and $_.
func (s *Snapshot) GoAhead(env map[string]string, script string) string {
	var b strings.Builder
	if passed := s.PassedThrough(env); len(passed) > 0 {
		// Before the deferred state, which may disable export. (Quoted for
		// zsh, where a global alias expands anywhere.)
		b.WriteString(`\builtin \export`)
		for _, name := range slices.Sorted(maps.Keys(passed)) {
			b.WriteString(" " + name + "=" + ansiQuote(env[name]))
		}
		b.WriteString("; ")
	}
	if s.zsh {
		b.WriteString("ZSH_EXECUTION_STRING=" + ansiQuote(script) + "; " + s.goAhead)
		return b.String()
	}
	// export -n: under allexport the assignment would export it.
	b.WriteString("BASH_EXECUTION_STRING=" + ansiQuote(script) + "; \\builtin export -n BASH_EXECUTION_STRING; " + s.goAhead)
	return b.String()
}

// Definitions are the names a bash or zsh state defines.
type Definitions struct {
	// Functions and Aliases are the names of the state's functions and
	// aliases (zsh's global aliases among them).
	Functions, Aliases map[string]bool
	// SuffixAliases are the suffixes of a zsh state's suffix aliases.
	SuffixAliases map[string]bool
	// ExpandAliases is set when the state turns expand_aliases on (zsh:
	// leaves the aliases option on).
	ExpandAliases bool
	// Traps is set when a bash state sets a trap, after which bash runs
	// no command in its own place.
	Traps bool
	// envTouched holds the names of the variables the restore reads, sets,
	// unsets or gives attributes (bashEnvTouched, zshEnvTouched); nil when
	// unknown, and then every name is.
	envTouched map[string]bool
}

// Definitions returns the names s's bash or zsh state defines, read from
// its capture's records; nil for a snapshot of sh, which no standby serves.
func (s *Snapshot) Definitions() *Definitions { return s.definitions }

// PassedThrough returns the names of env, the environment of a bash (zsh)
// launch of s (before Replay), that a replay of s hands to the command
// exactly as env has them and does nothing else with: the restore neither
// reads nor changes them, and the shell gives them no meaning of its own at
// start or when they are assigned. Such a variable reaches the command the
// same whether the shell imported it at start or a standby's go-ahead
// exports it after the restore, so one standby shell serves launches that
// differ only there (a trace id). There are none when env carries a
// BASH_ENV (ZDOTDIR) of its own, which names files the shell may run.
func (s *Snapshot) PassedThrough(env map[string]string) map[string]bool {
	if s.definitions == nil || s.definitions.envTouched == nil {
		return nil
	}
	own, meaningful := []string{"BASH_ENV", userBashEnvVar}, bashMeaningful
	if s.zsh {
		own, meaningful = []string{"ZDOTDIR", userZdotdirVar}, zshMeaningful
	}
	for _, name := range own {
		if _, ok := env[name]; ok {
			return nil
		}
	}
	passed := map[string]bool{}
	for name := range env {
		if !s.definitions.envTouched[name] && identifier.MatchString(name) && !meaningful(name) {
			passed[name] = true
		}
	}
	return passed
}

// zshMeaningful reports whether zsh may give a variable of that name a
// meaning of its own. Wider than zsh's own list, as bashMeaningful is:
// every name with a lower-case letter (zsh's special arrays and its
// modules' parameters are lower case), bash's names, and zsh's upper-case
// ones and families.
func zshMeaningful(name string) bool {
	if strings.ToUpper(name) != name || bashMeaningful(name) || zshSpecialPrefix.MatchString(name) {
		return true
	}
	_, skipped := zshSkipped[name]
	return skipped
}

// zshSpecialPrefix matches the upper-case names and families zsh reads,
// sets or acts on (and its modules': zsh/watch, zsh/zle, ...).
var zshSpecialPrefix = regexp.MustCompile(`^(ZSH|ZLE|ZDOTDIR|ZBEEP|FPATH|MODULE_PATH|MANPATH|PSVAR|FIGNORE|WORDCHARS|KEYTIMEOUT|KEYBOARD_HACK|NULLCMD|READNULLCMD|PROMPT|RPROMPT|RPS[0-9]|SPROMPT|SAVEHIST|REPORT|TMPPREFIX|TIMEFMT|WATCH|LOGCHECK|STTY|POSTEDIT|LISTMAX|DIRSTACKSIZE|FCEDIT|BAUD|CORRECT_IGNORE|LINENO|PPID|ERRNO|RANDOM|SECONDS|EPOCH|TRY_BLOCK|USERNAME|LOGNAME|UID|EUID|GID|EGID|TTY|VENDOR|CPUTYPE|HOST|PERIOD|ARGC|TERMINFO|LISTPROMPT|MAILCHECK|SHLVL|PWD|OLDPWD|PATH|CDPATH|MAILPATH|HISTCHARS|HISTCMD|BEEP)`)

// bashMeaningful reports whether bash gives a variable of that name a
// meaning of its own: it reads it at start (SHELLOPTS, BASH_ENV, an
// exported function, the locale), acts when it is assigned (PATH empties
// the hash table, TZ, HISTSIZE), or sets it itself (PWD, OLDPWD, SHLVL, _).
// The list is wider than bash's own, so that a name it misses is only one
// more launch a standby does not share.
func bashMeaningful(name string) bool {
	if _, ok := bashSkipped[name]; ok || bashSpecialPrefix.MatchString(name) {
		return true
	}
	switch name {
	case "ENV", "HOME", "PATH", "IFS", "CDPATH", "LANG", "LANGUAGE", "TZ", "OPTIND", "OPTARG", "OPTERR",
		"GLOBIGNORE", "GLOBSORT", "EXECIGNORE", "FIGNORE", "FUNCNEST", "IGNOREEOF", "ignoreeof", "INPUTRC",
		"TMOUT", "TMPDIR", "COLUMNS", "LINES", "CHILD_MAX", "HOSTFILE", "HOSTNAME", "HOSTTYPE", "MACHTYPE",
		"OSTYPE", "PROMPT_COMMAND", "PROMPT_DIRTRIM", "TIMEFORMAT", "auto_resume", "histchars", "EMACS",
		"INSIDE_EMACS", "OLDPWD", "REPLY", "COPROC", "MAPFILE", "NLSPATH", "SHELL":
		return true
	}
	return false
}

// bashSpecialPrefix matches the families of names bash or this server give
// a meaning: BASH_*, SHELLOPTS and the like, completion, history, locale,
// prompts, readline, mail, the terminal, the message catalogue, and the
// server's own variables.
var bashSpecialPrefix = regexp.MustCompile(`^(BASH|SHELL|POSIXLY|COMP|HIST|LC_|PS[0-9]|READLINE|MAIL|TERM|TEXTDOMAIN|__SNAPEXEC_|__CODEX_)`)

// bashEnvTouched returns the names a bash capture's restore touches: every
// variable the profile left other than an exported scalar with the value
// and attributes the capture started with, and every variable of either
// environment that the profile set, changed or unset.
func bashEnvTouched(recs []record, captureEnv, final map[string]string) map[string]bool {
	touched := map[string]bool{}
	same := func(name string) bool {
		c, inCapture := captureEnv[name]
		f, inFinal := final[name]
		return inCapture && inFinal && c == f
	}
	for _, env := range []map[string]string{captureEnv, final} {
		for name := range env {
			if !same(name) {
				touched[name] = true
			}
		}
	}
	for name, v := range bashVars(byKind(recs)) {
		if v.flags != "-x" || !same(name) {
			touched[name] = true
		}
	}
	return touched
}

// standbyScriptVar carries a standby's script from its go-ahead to the
// eval that runs it; it is unset before the script runs.
const standbyScriptVar = "__CODEX_SHELL_SNAPSHOT_SCRIPT"

// StandbyWaitLine is the script of a standby shell's command, a snapshot's
// (package standby) or a session's (SessionLaunch.Standby): it closes fd 4,
// which tells the server that the state is restored (exec.Held.Ready), reads
// the go-ahead from fd 3 (exec.Held) and runs what the go-ahead carries
// (StandbyMessage). The command words are quoted, so that a restored alias
// cannot rewrite them. exec must be the exec builtin itself: through
// "builtin", its redirection would be undone.
const StandbyWaitLine = `\exec 4>&-; \builtin . /dev/fd/3; \exec 3<&-; \builtin eval "\builtin unset ` + standbyScriptVar + "; $" + standbyScriptVar + `"`

// StandbyWaitLineZsh is StandbyWaitLine for zsh. It turns evallineno off
// for the eval that runs the go-ahead, so that zsh names the script's
// errors "zsh:1:" as it names a -c string's, not "(eval):1:"; the go-ahead
// turns it back on (zshStandby) for the evals of the script itself. Then
// zsh counts no lines in that eval, so that a standby serves only scripts
// of one line, and it closes fds 4 and 3 with the exec builtin through builtin,
// which zsh, unlike bash, leaves closed. Every word is quoted: zsh expands
// a global alias in any place, and builtin calls no alias.
const StandbyWaitLineZsh = `\builtin \exec 4>&-; \builtin \. \/dev/fd/3; \builtin \exec 3<&-; \builtin \unsetopt \evallineno; \builtin \eval "\builtin \unset \` + standbyScriptVar + "; $" + standbyScriptVar + `"`

// StandbyMessage is the go-ahead that makes a standby shell waiting in
// StandbyWaitLine run run, in one eval.
func StandbyMessage(run string) []byte {
	return []byte(standbyScriptVar + "=" + quote(run) + "\n")
}

// StandbyMessageZsh is StandbyMessage for zsh: run in one $'...' word,
// which holds no newline, so that no option of the state (cshjunkiequotes)
// finds a newline inside quotes.
func StandbyMessageZsh(run string) []byte {
	return []byte(standbyScriptVar + "=" + ansiQuote(run) + "\n")
}

// StandbyTraced reports whether script may turn xtrace or verbose on,
// which a standby shell does not serve: in an eval, xtrace marks commands
// "++", not "+". It may match more, such as a --verbose flag: such a
// command runs fresh.
func StandbyTraced(script string) bool { return traced.MatchString(script) }

var traced = regexp.MustCompile(`\bset\s+[-+][[:alpha:]]*[xv]|xtrace|verbose`)
