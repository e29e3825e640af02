package shellsnap

// SessionShell reports whether sessions support the shell named name: bash
// (session_bash.go) and zsh (session_zsh.go).
func SessionShell(name string) bool { return name == "bash" || name == "zsh" }
