package service

import (
	"os"
	"sync"

	"github.com/snapexec/snapexec/internal/shellsnap"
)

// terminalFiles is the private directory of the startup files that login
// terminals replayed from a snapshot read (shellsnap.ReplayInteractive):
// made at the first such terminal, removed at Shutdown.
type terminalFiles struct {
	mu  sync.Mutex
	dir string
}

// replay rewrites out, a login terminal's launch, to start from in's
// snapshot, and returns the receipt. When the startup files cannot be
// written the terminal is a real login terminal, as a command is when its
// capture fails, and the receipt says fallback.
func (t *terminalFiles) replay(in shellsnap.ReplayInput, out *launch, r shellsnap.Receipt) shellsnap.Receipt {
	dir, err := t.directory()
	if err == nil {
		var argv []string
		var env map[string]string
		if argv, env, err = shellsnap.ReplayInteractive(in, dir); err == nil {
			out.argv, out.env = argv, env
			return r
		}
	}
	r.Outcome, r.Reason = shellsnap.OutcomeFallback, "the terminal's startup file could not be written"
	return r
}

// directory returns the directory, made on first use.
func (t *terminalFiles) directory() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dir == "" {
		dir, err := os.MkdirTemp("", "snapexec-terminals-")
		if err != nil {
			return "", err
		}
		t.dir = dir
	}
	return t.dir, nil
}

// remove removes the directory, once no terminal can start.
func (t *terminalFiles) remove() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dir != "" {
		_ = os.RemoveAll(t.dir)
		t.dir = ""
	}
}
