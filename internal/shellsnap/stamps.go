package shellsnap

import (
	"os"
	"path/filepath"
	"syscall"
)

// fileStamp is the identity of one startup file: a file that appears, goes,
// is replaced or is edited gets a different stamp.
type fileStamp struct {
	path    string
	exists  bool
	dev     uint64
	ino     uint64
	size    int64
	mtimeNs int64
}

// stampFiles stats paths. Missing files are stamped as missing, so that a
// profile created after the capture makes the snapshot stale too.
func stampFiles(paths []string) []fileStamp {
	stamps := make([]fileStamp, len(paths))
	for i, p := range paths {
		stamps[i] = stampFile(p)
	}
	return stamps
}

func stampFile(path string) fileStamp {
	s := fileStamp{path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return s
	}
	s.exists, s.size, s.mtimeNs = true, fi.Size(), fi.ModTime().UnixNano()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), st.Ino
	}
	return s
}

// stale reports whether any file's identity changed since stamps were taken.
func stale(stamps []fileStamp) bool {
	for _, s := range stamps {
		if stampFile(s.path) != s {
			return true
		}
	}
	return false
}

// startupFiles lists the files a login shell of this kind reads, resolved
// against the capture's environment (HOME, ZDOTDIR, BASH_ENV, ENV).
func startupFiles(shell string, env map[string]string) []string {
	home := env["HOME"]
	inHome := func(names ...string) []string {
		if home == "" {
			return nil
		}
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = filepath.Join(home, n)
		}
		return out
	}
	var files []string
	switch shell {
	case "bash":
		files = append([]string{"/etc/profile", "/etc/bash.bashrc"},
			inHome(".bash_profile", ".bash_login", ".profile", ".bashrc")...)
		if v := env["BASH_ENV"]; v != "" {
			files = append(files, v)
		}
	case "zsh":
		files = []string{"/etc/zshenv", "/etc/zsh/zshenv", "/etc/zprofile", "/etc/zsh/zprofile",
			"/etc/zshrc", "/etc/zsh/zshrc", "/etc/zlogin", "/etc/zsh/zlogin"}
		dot := env["ZDOTDIR"]
		if dot == "" {
			dot = home
		}
		if dot != "" {
			for _, n := range []string{".zshenv", ".zprofile", ".zshrc", ".zlogin"} {
				files = append(files, filepath.Join(dot, n))
			}
		}
	case "sh":
		files = append([]string{"/etc/profile"}, inHome(".profile")...)
		if v := env["ENV"]; v != "" {
			files = append(files, v)
		}
	}
	return files
}
