package shellsnap

import (
	"slices"
	"strings"
)

// A login terminal's snapshot is an interactive login shell's state
// (Launch.Terminal), and its restore has what a command's has not: the line
// editor as the startup files left it. Its capture lists the editor's
// keymaps before and after the startup files (bashKeysListing,
// zshKeysListing) and, when they differ, keeps both listings as records
// (bindings0, bindings); the restore replays the difference.

// keySections splits a keymaps listing into its sections, by the name of
// each ("@@ NAME" starts one), every line in the order it came.
func keySections(listing string) map[string][]string {
	sections := map[string][]string{}
	name := ""
	for line := range strings.SplitSeq(listing, "\n") {
		if rest, ok := strings.CutPrefix(line, "@@ "); ok {
			name = rest
			continue
		}
		if line != "" {
			sections[name] = append(sections[name], line)
		}
	}
	return sections
}

// added returns the lines of after that are not in before.
func added(before, after []string) []string {
	var out []string
	for _, line := range after {
		if !slices.Contains(before, line) {
			out = append(out, line)
		}
	}
	return out
}

// bashBindings returns the bind commands that give a login terminal's
// readline what the startup files changed in it, from the capture's
// bindings0 and bindings records: readline's variables that they set (but
// editing-mode and keymap, which set -o emacs or vi restores), and per
// keymap the key sequences they unbound, then what they bound to a
// function, a macro or a shell command. Empty when nothing changed.
func bashBindings(rs records) string {
	before, ok0 := rs.one("bindings0")
	after, ok1 := rs.one("bindings")
	if !ok0 || !ok1 {
		return ""
	}
	b, a := keySections(before), keySections(after)
	var cmds []string
	for _, line := range added(b["v"], a["v"]) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "set" && f[1] != "editing-mode" && f[1] != "keymap" {
			cmds = append(cmds, `\builtin bind `+quote(line))
		}
	}
	for _, keymap := range strings.Fields(bashKeymaps) {
		bound := map[string]bool{}
		for _, kind := range []string{"p", "s", "x"} {
			for _, line := range a[keymap+" "+kind] {
				if seq, _, ok := keyBinding(line); ok {
					bound[seq] = true
				}
			}
		}
		unbound := map[string]bool{}
		for _, kind := range []string{"p", "s", "x"} {
			for _, line := range added(a[keymap+" "+kind], b[keymap+" "+kind]) {
				if seq, _, ok := keyBinding(line); ok && !bound[seq] && !unbound[seq] {
					unbound[seq] = true
					cmds = append(cmds, `\builtin bind -m `+keymap+` -r `+quote(seq))
				}
			}
		}
		for _, kind := range []string{"p", "s"} {
			for _, line := range added(b[keymap+" "+kind], a[keymap+" "+kind]) {
				if _, _, ok := keyBinding(line); ok {
					cmds = append(cmds, `\builtin bind -m `+keymap+` `+quote(line))
				}
			}
		}
		for _, line := range added(b[keymap+" x"], a[keymap+" x"]) {
			if spec, ok := bindXSpec(line); ok {
				cmds = append(cmds, `\builtin bind -m `+keymap+` -x `+quote(spec))
			}
		}
	}
	return strings.Join(cmds, "\n")
}

// keyBinding splits a line of bind -p, -s or -X, `"KEYSEQ": VALUE`, into its
// key sequence as bind -r takes it (without the quotes, its escapes as
// printed) and its value; ok is false for another line (a comment).
func keyBinding(line string) (seq, value string, ok bool) {
	if !strings.HasPrefix(line, `"`) {
		return "", "", false
	}
	for i := 1; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			if value, ok = strings.CutPrefix(line[i+1:], ": "); !ok {
				return "", "", false
			}
			return line[1:i], value, true
		}
	}
	return "", "", false
}

// bindXSpec turns a line of bind -X back into an argument of bind -x. bash
// 5.2 prints the command between double quotes with its quotes and
// backslashes escaped, but bind -x takes a double-quoted command as it is,
// escapes and all; so the command is unescaped, and then given between
// single quotes, which bind -x also takes as they are, or double quotes,
// or none. ok is false for a command none of those can carry.
func bindXSpec(line string) (spec string, ok bool) {
	seq, value, ok := keyBinding(line)
	if !ok || len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
		return "", false
	}
	var cmd strings.Builder
	for i := 1; i < len(value)-1; i++ {
		if value[i] == '\\' && i+1 < len(value)-1 {
			i++
		}
		cmd.WriteByte(value[i])
	}
	c := cmd.String()
	switch {
	case !strings.Contains(c, "'"):
		return `"` + seq + `": '` + c + `'`, true
	case !strings.Contains(c, `"`) && !strings.HasSuffix(c, `\`):
		return `"` + seq + `": "` + c + `"`, true
	case c != "" && !strings.ContainsAny(c[:1], "\"' \t"):
		return `"` + seq + `": ` + c, true
	}
	return "", false
}

// zshOwnAliases are the aliases every zsh defines itself at start, before
// any startup file: a profile that removed them has them back in any new
// shell, a replayed terminal's too.
var zshOwnAliases = []string{"run-help", "which-command"}

// zshTerminalSteps adds a login terminal's extras to a zsh plan. Before its
// aliases, every alias the replayed shell has is removed: zsh defines some
// itself (zshOwnAliases), which the startup files may have removed, and the
// terminal then has exactly theirs, none twice. After its other steps, the
// widgets and keymaps that the startup files changed, from the capture's
// bindings0 and bindings records (zshKeysListing): the widgets they
// defined or removed, each keymap they changed as a whole (emptied, then
// bound as listed, ranges and all), and the keymap that main stands for.
func zshTerminalSteps(p *restorePlan, rs records) {
	clear := step{tail: true, code: `\builtin unalias -m '*' 2>/dev/null; \builtin unalias -s -m '*' 2>/dev/null`}
	i := slices.IndexFunc(p.steps, func(s step) bool { return s.kind == "alias" })
	if i < 0 {
		i = len(p.steps)
	}
	p.steps = slices.Insert(p.steps, i, clear)

	before, ok0 := rs.one("bindings0")
	after, ok1 := rs.one("bindings")
	if !ok0 || !ok1 {
		return
	}
	b, a := keySections(before), keySections(after)
	var lines []string
	for _, line := range added(a["widgets"], b["widgets"]) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "zle" {
			lines = append(lines, `\builtin zle -D `+f[2])
		}
	}
	for _, line := range added(b["widgets"], a["widgets"]) {
		lines = append(lines, `\builtin `+line)
	}
	for _, keymap := range []string{"emacs", "viins", "vicmd"} {
		if slices.Equal(a[keymap], b[keymap]) {
			continue
		}
		lines = append(lines, `\builtin bindkey -M `+keymap+` -rp ''`)
		for _, line := range a[keymap] {
			lines = append(lines, `\builtin `+line)
		}
	}
	if m := a["main"]; len(m) == 1 && !slices.Equal(m, b["main"]) {
		lines = append(lines, `\builtin `+m[0])
	}
	if len(lines) > 0 {
		p.add(step{tail: true, code: "{\n" + strings.Join(lines, "\n") + "\n} 2>/dev/null"})
	}
}
