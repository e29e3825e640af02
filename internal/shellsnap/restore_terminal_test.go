package shellsnap

import (
	"strings"
	"testing"
)

func TestKeyBinding(t *testing.T) {
	tests := []struct {
		line, seq, value string
		ok               bool
	}{
		{`"\C-a": beginning-of-line`, `\C-a`, "beginning-of-line", true},
		{`"\C-x\"": "quote"`, `\C-x\"`, `"quote"`, true},
		{`"\\": self-insert`, `\\`, "self-insert", true},
		{`"\e[A": previous-history`, `\e[A`, "previous-history", true},
		{`# vi-eof-maybe (not bound)`, "", "", false},
		{`set bell-style audible`, "", "", false},
		{`"\C-a" beginning-of-line`, "", "", false},
		{`"unclosed`, "", "", false},
	}
	for _, tt := range tests {
		seq, value, ok := keyBinding(tt.line)
		if seq != tt.seq || value != tt.value || ok != tt.ok {
			t.Errorf("keyBinding(%q) = %q, %q, %t; want %q, %q, %t", tt.line, seq, value, ok, tt.seq, tt.value, tt.ok)
		}
	}
}

// TestBindXSpec: bash 5.2's bind -X escapes the command's quotes and
// backslashes, which bind -x does not take back; the spec gives bind -x the
// command as it was.
func TestBindXSpec(t *testing.T) {
	tests := []struct {
		line, spec string
		ok         bool
	}{
		{`"\C-xh": "echo hi"`, `"\C-xh": 'echo hi'`, true},
		{`"\C-xh": "echo \"$HOME\" hi"`, `"\C-xh": 'echo "$HOME" hi'`, true},
		{`"\C-xh": "printf %s\\\\n x\\y"`, `"\C-xh": 'printf %s\\n x\y'`, true},
		{`"\C-xh": "echo 'a b'"`, `"\C-xh": "echo 'a b'"`, true},
		{`"\C-xh": "echo 'a' \"b\""`, `"\C-xh": echo 'a' "b"`, true},
		{`"\C-xh": "'a' \"b\""`, "", false},
		{`"\C-xh": unquoted`, "", false},
		{`# comment`, "", false},
	}
	for _, tt := range tests {
		spec, ok := bindXSpec(tt.line)
		if spec != tt.spec || ok != tt.ok {
			t.Errorf("bindXSpec(%q) = %q, %t; want %q, %t", tt.line, spec, ok, tt.spec, tt.ok)
		}
	}
}

// TestBashBindings: the bind commands replay what changed between the
// listings before and after the startup files, keymap by keymap: unbound
// sequences first (not those bound anew, whatever to), then the bindings
// made, then readline's variables but the editing mode's.
func TestBashBindings(t *testing.T) {
	before := `@@ v
set bell-style audible
set completion-ignore-case off
set editing-mode emacs
@@ emacs p
"\C-a": beginning-of-line
"\C-x\C-r": re-read-init-file
"\C-xg": glob-list-expansions
# clear-screen (not bound)
@@ emacs s
@@ emacs x
@@ vi-insert p
"\C-l": self-insert
@@ vi-insert s
@@ vi-insert x
@@ vi-command p
@@ vi-command s
@@ vi-command x`
	after := `@@ v
set bell-style audible
set completion-ignore-case on
set editing-mode vi
@@ emacs p
"\C-a": end-of-line
# glob-list-expansions (not bound)
# clear-screen (not bound)
@@ emacs s
"\C-xg": "hello"
@@ emacs x
"\C-xh": "echo \"$HOME\""
@@ vi-insert p
"\C-l": clear-screen
@@ vi-insert s
@@ vi-insert x
@@ vi-command p
@@ vi-command s
@@ vi-command x`
	got := bashBindings(records{"bindings0": {{kind: "bindings0", payload: before}}, "bindings": {{kind: "bindings", payload: after}}})
	want := strings.Join([]string{
		`\builtin bind 'set completion-ignore-case on'`,
		`\builtin bind -m emacs -r '\C-x\C-r'`,
		`\builtin bind -m emacs '"\C-a": end-of-line'`,
		`\builtin bind -m emacs '"\C-xg": "hello"'`,
		`\builtin bind -m emacs -x '"\C-xh": '\''echo "$HOME"'\'''`,
		`\builtin bind -m vi-insert '"\C-l": clear-screen'`,
	}, "\n")
	if got != want {
		t.Errorf("bashBindings() =\n%s\nwant\n%s", got, want)
	}
	if got := bashBindings(records{}); got != "" {
		t.Errorf("bashBindings() of no records = %q, want none: nothing changed", got)
	}
}

// TestZshTerminalSteps: a zsh terminal's plan removes every alias before
// its own, then replays the widgets and whole keymaps the startup files
// changed, and the keymap main stands for when that changed.
func TestZshTerminalSteps(t *testing.T) {
	p := &restorePlan{shell: "zsh", steps: []step{
		{tail: true, kind: "function", name: "w", code: "w() { :; }"},
		{tail: true, kind: "alias", name: "ll", code: "aliases[ll]='ls -l'"},
	}}
	before := "@@ main\nbindkey -A emacs main\n@@ emacs\nbindkey -M emacs \"^A\" beginning-of-line\n@@ viins\n@@ vicmd\nbindkey -a \"q\" x\n@@ widgets\nzle -N gone"
	after := "@@ main\nbindkey -A viins main\n@@ emacs\nbindkey -M emacs \"^Xw\" w\n@@ viins\n@@ vicmd\nbindkey -a \"q\" x\n@@ widgets\nzle -N w"
	zshTerminalSteps(p, records{"bindings0": {{payload: before}}, "bindings": {{payload: after}}})
	var codes []string
	for _, s := range p.steps {
		codes = append(codes, s.code)
	}
	want := []string{
		"w() { :; }",
		`\builtin unalias -m '*' 2>/dev/null; \builtin unalias -s -m '*' 2>/dev/null`,
		"aliases[ll]='ls -l'",
		"{\n" + `\builtin zle -D gone` + "\n" + `\builtin zle -N w` + "\n" + `\builtin bindkey -M emacs -rp ''` + "\n" +
			`\builtin bindkey -M emacs "^Xw" w` + "\n" + `\builtin bindkey -A viins main` + "\n} 2>/dev/null",
	}
	if strings.Join(codes, "\n--\n") != strings.Join(want, "\n--\n") {
		t.Errorf("zshTerminalSteps() steps =\n%s\nwant\n%s", strings.Join(codes, "\n--\n"), strings.Join(want, "\n--\n"))
	}
}
