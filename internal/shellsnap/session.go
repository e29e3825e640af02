package shellsnap

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
