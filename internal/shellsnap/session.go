package shellsnap

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// SessionShell reports whether sessions support the shell named name: bash
// (session_bash.go) and zsh (session_zsh.go).
func SessionShell(name string) bool { return name == "bash" || name == "zsh" }

// Ready does now what the command after state s would do first, so that
// it does not: writes s's restore file and reads its names (Changes). The
// caller runs it off the answer's path of the command that made s; an
// error is the next command's, which meets it again.
func (f *SessionFiles) Ready(s *SessionState) {
	_, _ = s.restoreFile(f)
	s.names()
}

// A session command's dump is also a line after the script (bash, zsh), so
// that a script that replaces the EXIT trap still hands its state on; that
// line must not be read into the script's last command. The parser reads
// the script as the shell would only while no alias changes its text: an
// alias whose value is not whole syntax by itself (a here-document, a
// backslash, a pipe or && last, a quote or a compound command left open)
// would join the line to the script's last command, or read it as a
// here-document's text, which the command then prints.

// aliasCanOpenLine reports whether an alias may leave script's last line
// open, run in state (nil: none) or, for a session's first command, in snap
// (nil: none). Aliases expand in the script's text only when the state (or
// snapshot) has them on (bash's expand_aliases, zsh's aliases option), or
// the script can turn them on (it names expand_aliases, posix or
// POSIXLY_CORRECT, in any quoting); then every alias of the state must be
// whole (a snapshot's values are not kept: it may have none), and the
// script may define none: it names no alias (nor BASH_ALIASES) and the
// state has no function that names one. A file the script sources that
// turns aliases on and defines one that opens a line used on the script's
// last line is not seen.
func aliasCanOpenLine(script string, lang syntax.LangVariant, state *SessionState, snap *Snapshot) bool {
	plain := unquoted(script)
	on, open := lang == syntax.LangZsh, func() bool { return false }
	switch {
	case state != nil:
		on, open = state.aliasesOn(lang), func() bool { return state.aliasOpen(lang) }
	case snap != nil && snap.definitions != nil:
		d := snap.definitions
		on, open = d.ExpandAliases, func() bool { return len(d.Aliases)+len(d.SuffixAliases) > 0 }
	}
	if !on && !strings.Contains(plain, "expand_aliases") && !strings.Contains(plain, "posix") && !strings.Contains(plain, "POSIXLY_CORRECT") {
		return false
	}
	return open() || scriptAliasCanOpenLine(script, plain, lang)
}

// scriptAliasCanOpenLine reports whether script may define an alias that
// is not whole: it assigns BASH_ALIASES, or names alias (in any quoting)
// other than in alias commands whose words are all literal, or one of
// those defines an alias that is not whole. plain is script without
// quotes and backslashes, where every alias the script names shows.
func scriptAliasCanOpenLine(script, plain string, lang syntax.LangVariant) bool {
	if strings.Contains(plain, "BASH_ALIASES") {
		return true
	}
	// expand_aliases and unalias define none.
	named := strings.Count(plain, "alias") - strings.Count(plain, "expand_aliases") - strings.Count(plain, "unalias")
	if named == 0 {
		return false
	}
	f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(script), "")
	if err != nil {
		return true
	}
	open := false
	syntax.Walk(f, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if open || !ok || len(call.Args) == 0 || literal(call.Args[0]) != "alias" {
			return !open
		}
		for _, w := range call.Args {
			word := literal(w)
			if word == "" {
				open = true // an alias made from an expansion
				return false
			}
			named -= strings.Count(word, "alias")
			if name, value, ok := strings.Cut(word, "="); ok && !strings.HasPrefix(name, "-") {
				kind := "alias"
				if lang == syntax.LangZsh && call.Args[1] != w && literal(call.Args[1]) == "-g" {
					kind = "galias"
				}
				open = open || !wholeAlias(kind, value, lang)
			}
		}
		return !open
	})
	// Any other alias named: eval "alias ...", builtin alias, a heredoc.
	return open || named != 0
}

// aliasesOn reports whether aliases expand in s's shell: bash's
// expand_aliases, zsh's aliases option (on unless turned off).
func (s *SessionState) aliasesOn(lang syntax.LangVariant) bool {
	on := lang == syntax.LangZsh
	for _, r := range s.recs {
		switch r.kind {
		case "shopts":
			on = on || slices.Contains(strings.Split(r.payload, ":"), "expand_aliases")
		case "options":
			on = on && !slices.Contains(strings.Split(r.payload, "\n"), "aliases off")
		}
	}
	return on
}

// aliasOpen reports whether one of s's aliases is not whole syntax
// (wholeAlias) or one of its functions names alias, read once: only a
// state whose aliases expand reads it, each alias parsed.
func (s *SessionState) aliasOpen(lang syntax.LangVariant) bool {
	s.aliasOnce.Do(func() {
		for _, r := range s.recs {
			switch r.kind {
			case "fn":
				s.openAlias = s.openAlias || strings.Contains(r.payload, "alias")
			case "alias", "salias", "galias":
				s.openAlias = s.openAlias || !wholeAlias(r.kind, r.payload, lang)
			}
		}
	})
	return s.openAlias
}

// unquoted is script without quotes and backslashes, where a name the
// script writes in any quoting shows as the name (B"ASH_"ALIASES).
func unquoted(script string) string {
	return strings.NewReplacer(`\`, "", `'`, "", `"`, "").Replace(script)
}

// wholeAlias reports whether an alias of kind (alias, salias, or zsh's
// global galias) whose value is value leaves no line open where it stands:
// a global one is expanded anywhere, after a word most often (| grep).
func wholeAlias(kind, value string, lang syntax.LangVariant) bool {
	if kind == "galias" {
		return wholeSyntax("x "+value, lang)
	}
	return wholeSyntax(value, lang)
}

// wholeSyntax reports whether text is whole syntax of lang by itself, as
// far as the parser knows it, and does not end in a backslash.
func wholeSyntax(text string, lang syntax.LangVariant) bool {
	_, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(text), "")
	return err == nil && !strings.HasSuffix(text, `\`)
}
