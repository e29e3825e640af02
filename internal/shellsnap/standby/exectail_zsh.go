package standby

import (
	"path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/snapexec/snapexec/internal/shellsnap"
)

// A zsh standby runs the script in an eval with evallineno off
// (shellsnap.StandbyWaitLineZsh), the one eval whose errors zsh names as it
// names a -c string's ("zsh:1:", not "(eval):1:"). Such an eval counts no
// lines, neither its own nor those of the functions it calls, and adds a
// level to ZSH_EVAL_CONTEXT ("cmdarg:eval"). So a zsh standby serves only
// the scripts whose answers cannot show that: one line, no function called,
// no code run from a string or a file, no ZSH_EVAL_CONTEXT. And zsh, like
// bash, runs the last command of a -c string in place of itself, and never
// that of an eval: zshTailScript writes the exec where zsh would have done
// it (docs/design/standby.md#zsh).

// zshTailScript returns the script a zsh standby runs for in's script so
// that the user's command cannot tell it from Replay's, like tailScript:
// the script itself, or the script with "\exec " before its last command
// when zsh would have run that command in place of Replay's shell.
//
// ok is false when the script is one a zsh standby does not run exactly:
// it has more than one line, does not parse (as mvdan.cc/sh reads zsh),
// may call a function (it defines one; a word of it names a function or
// an alias of the state, or a suffix alias matches a command; a command
// word is not a plain word) or run code another way (zshRuns), or names
// ZSH_EVAL_CONTEXT; or its last command is one zsh may run in its own
// place and the analysis cannot say how (a compound command, a precommand
// modifier, a program not found in PATH, a script that sets options).
func zshTailScript(in shellsnap.ReplayInput, dir string, env []string, builtins map[string]bool) (string, bool) {
	script := in.Command[2]
	names := in.Snapshot.Definitions()
	if builtins == nil || names == nil || strings.Contains(strings.TrimSuffix(script, "\n"), "\n") || zshUnsure.MatchString(script) {
		return "", false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangZsh)).Parse(strings.NewReader(script), "")
	if err != nil || !zshPlainCalls(f, names) {
		return "", false
	}
	call, known := zshExecTail(f)
	switch {
	case !known:
		return "", false
	case call == nil:
		return script, true // zsh forks for it too
	}
	word := call.Args[0].Lit()
	switch {
	case zshModifiers[word]:
		return "", false // zsh runs the command after it in its place
	case builtins[word]:
		return script, true // a builtin or reserved word: runs in the shell either way
	}
	// The state sets no trap (a zsh standby serves none that does): zsh
	// runs the program in its place unless the script changes that.
	if !zshOptionsKept(f) {
		return "", false
	}
	if _, found := findProgram(word, dir, env); !found {
		// A directory (autocd) or no program at all: leave it to zsh.
		return "", false
	}
	at := int(call.Args[0].Pos().Offset())
	// Quoted, so that no alias of the state named exec expands (a zsh
	// standby serves no state with a function of that name).
	return script[:at] + "\\exec " + script[at:], true
}

// zshUnsure matches what a zsh standby leaves to a fresh replay whatever the
// parse says: ZSH_EVAL_CONTEXT or zsh_eval_context, which show the eval,
// and zsh's &| and &! (background and disown), which mvdan.cc/sh does not
// read as zsh does.
var zshUnsure = regexp.MustCompile(`(?i)eval_context|&[|!]`)

// zshModifiers are zsh's precommand modifiers: the command after them is
// what runs.
var zshModifiers = map[string]bool{"builtin": true, "command": true, "exec": true, "noglob": true, "nocorrect": true, "-": true}

// zshRuns are the builtins and reserved words that run code from a string
// or a file, define or load functions, set traps, or change what a name
// runs: a standby's eval would count their lines, or show itself, unlike
// Replay's command.
var zshRuns = map[string]bool{
	"eval": true, ".": true, "source": true, "trap": true, "function": true, "autoload": true, "functions": true,
	"unfunction": true, "emulate": true, "zmodload": true, "alias": true, "unalias": true, "enable": true,
	"disable": true, "hash": true, "unhash": true, "rehash": true, "fc": true, "r": true, "sched": true,
	"zpty": true, "zle": true, "bindkey": true, "zcompile": true,
}

// zshPlainCalls reports whether f defines no function and calls none of
// names': every command word is a plain word that is no suffix alias's
// and none of zshRuns (nor is any word after a precommand modifier), and
// no word at all names a function or an alias of the state (zsh expands
// a global alias anywhere).
func zshPlainCalls(f *syntax.File, names *shellsnap.Definitions) bool {
	ok := true
	syntax.Walk(f, func(node syntax.Node) bool {
		switch n := node.(type) {
		case *syntax.FuncDecl:
			ok = false
		case *syntax.Word:
			if lit := n.Lit(); names.Functions[lit] || names.Aliases[lit] {
				ok = false
			}
		case *syntax.CallExpr:
			for _, arg := range n.Args {
				word := arg.Lit()
				if !plainWord.MatchString(word) || zshRuns[word] || names.SuffixAliases[strings.TrimPrefix(path.Ext(word), ".")] {
					ok = false
				}
				if !ok || !zshModifiers[word] && !strings.HasPrefix(word, "-") {
					break // the command word: what follows are its arguments
				}
			}
		}
		return ok
	})
	return ok
}

// zshOptionsKept reports whether f changes no option, which might change
// what zsh does with its last command.
func zshOptionsKept(f *syntax.File) bool {
	ok := true
	syntax.Walk(f, func(node syntax.Node) bool {
		if call, isCall := node.(*syntax.CallExpr); isCall && len(call.Args) > 0 {
			switch call.Args[0].Lit() {
			case "set", "setopt", "unsetopt":
				ok = false
			}
		}
		return ok
	})
	return ok
}

// zshExecTail returns the command zsh -c would run in place of itself, if
// it runs one, measured against zsh 5.9: the last command of the string,
// or the right side of a final && or || list, when it is a simple command
// (with assignments or redirections or neither). known is false when the
// last command is a compound one (a block, a subshell, if, case, a loop),
// inside which zsh may run the last command in its place too (it does for
// the last pass of a for loop): that is left to a fresh replay. zsh forks
// for a pipeline, a negated, timed or background command: call is nil then.
func zshExecTail(f *syntax.File) (call *syntax.CallExpr, known bool) {
	if len(f.Stmts) == 0 {
		return nil, true
	}
	stmt := f.Stmts[len(f.Stmts)-1]
	for {
		if stmt.Negated || stmt.Background || stmt.Coprocess {
			return nil, true
		}
		switch c := stmt.Cmd.(type) {
		case *syntax.CallExpr:
			if len(c.Args) == 0 {
				return nil, true // assignments only
			}
			return c, true
		case *syntax.BinaryCmd:
			if c.Op != syntax.AndStmt && c.Op != syntax.OrStmt {
				return nil, true // a pipeline
			}
			stmt = c.Y
		case *syntax.TimeClause, *syntax.TestClause, *syntax.ArithmCmd, *syntax.DeclClause, *syntax.LetClause:
			return nil, true
		default:
			return nil, false
		}
	}
}
