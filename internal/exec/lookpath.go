package exec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// lookPath resolves spec.Argv[0] the way the child's own shell would: through
// the child's PATH, or the server's when the child has none. os/exec would use
// the server's PATH even when the child has its own.
func lookPath(spec Spec) (string, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return "", ErrEmptyArgv
	}
	name := spec.Argv[0]
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) && spec.Dir != "" {
			name = filepath.Join(spec.Dir, name)
		}
		if err := executable(name); err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrSpawn, spec.Argv[0], err)
		}
		return name, nil
	}
	path, ok := envValue(spec.Env, "PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) && spec.Dir != "" {
			dir = filepath.Join(spec.Dir, dir)
		}
		candidate := filepath.Join(dir, name)
		if executable(candidate) == nil {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%w: %s: %w", ErrSpawn, name, exec.ErrNotFound)
}

// CheckProgram is nil when name can be started in dir with env (NAME=VALUE)
// as a Spawn would find it, and an ErrSpawn otherwise: for a caller that
// must tell a program that cannot start from a failure of what it runs.
func CheckProgram(name, dir string, env []string) error {
	_, err := lookPath(Spec{Argv: []string{name}, Dir: dir, Env: env})
	return err
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return os.ErrPermission
	}
	return nil
}

// envValue returns the value of name in a NAME=VALUE list; the last one wins,
// as it does for the child.
func envValue(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}
