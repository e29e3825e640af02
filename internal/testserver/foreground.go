package testserver

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// InForeground reports whether a process named comm has exec'd in the
// session that leader leads and leads its terminal's foreground group: a
// terminal's job has started, so that a Ctrl-C now reaches it rather than
// the shell that is starting it (which handles it as a shell does).
func InForeground(leader int, comm string) bool {
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || end < open || string(b[open+1:end]) != comm {
			continue
		}
		// After the name: state ppid pgrp session tty_nr tpgid.
		f := strings.Fields(string(b[end+1:]))
		if len(f) < 6 {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		session, _ := strconv.Atoi(f[3])
		tpgid, _ := strconv.Atoi(f[5])
		if session == leader && pgrp == tpgid {
			return true
		}
	}
	return false
}
