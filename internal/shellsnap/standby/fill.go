package standby

import (
	"context"
	"os"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// refill starts a standby for key in the background if its launch repeats
// (Options) and no standby waits for it or is starting.
func (sb *Pool) refill(key launchKey, spec exec.Spec, in *shellsnap.ReplayInput) {
	if !sb.current(key.snap) {
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.seenLocked(key.launch) || sb.idle[key] != nil || sb.filling[key] {
		return
	}
	sb.filling[key] = true
	go sb.fill(key, spec, *in)
}

// fill spawns key's standby and puts it among the idle ones, ending the
// least recently idle one when there are Max.
func (sb *Pool) fill(key launchKey, spec exec.Spec, in shellsnap.ReplayInput) {
	sb.learnBuiltins(spec.Argv[0])
	h, dir, err := sb.spawn(spec, in)
	// Pruned once it is in the map, so that a prune running meanwhile
	// either sees it or is seen here.
	sb.mu.Lock()
	defer sb.mu.Unlock()
	delete(sb.filling, key)
	if err != nil {
		return // shutting down, or the launch cannot start: its commands will say why
	}
	if len(sb.idle) >= sb.opts.Max {
		sb.dropLocked(sb.oldestLocked())
	}
	s := &standby{held: h, dir: dir, since: time.Now()}
	s.timer = time.AfterFunc(sb.opts.Idle, func() {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		if sb.idle[key] == s {
			sb.dropLocked(key)
		}
	})
	sb.idle[key] = s
	sb.pruneLocked() // this one too, if its snapshot went meanwhile
}

// spawn holds the standby shell of the launch spec replays from in, and
// returns it with the cwd it starts in.
func (sb *Pool) spawn(spec exec.Spec, in shellsnap.ReplayInput) (*exec.Held, os.FileInfo, error) {
	var dir os.FileInfo
	if spec.Dir != "" {
		var err error
		if dir, err = os.Stat(spec.Dir); err != nil {
			return nil, nil, err
		}
	}
	argv, env, _ := standbyCommand(in)
	// Held under the launch's sandbox: the command it runs inherits it.
	h, err := sb.procs.Hold(exec.Spec{Argv: argv, Dir: spec.Dir, Env: envpolicy.List(env), MaxOutputBytes: spec.MaxOutputBytes, Sandbox: spec.Sandbox})
	return h, dir, err
}

// seenLocked records that launch runs now and reports whether it ran within
// the idle time before.
func (sb *Pool) seenLocked(launch launchID) bool {
	now := time.Now()
	last, ok := sb.seen[launch]
	sb.seen[launch] = now
	if len(sb.seen) > maxSeenLaunches {
		for l, t := range sb.seen {
			if now.Sub(t) > sb.opts.Idle || len(sb.seen) > maxSeenLaunches {
				delete(sb.seen, l) // expired first; then any, in map order
			}
		}
	}
	return ok && now.Sub(last) <= sb.opts.Idle
}

// learnBuiltins lists the builtins of the shell at path once; without them
// no standby serves its commands (tailScript).
func (sb *Pool) learnBuiltins(path string) {
	sb.mu.Lock()
	_, known := sb.builtins[path]
	sb.mu.Unlock()
	if known {
		return
	}
	builtins, err := shellBuiltins(context.Background(), sb.procs, path)
	if err != nil {
		return // tried again at the next fill
	}
	sb.mu.Lock()
	sb.builtins[path] = builtins
	sb.mu.Unlock()
}

// oldestLocked returns the key of the standby idle the longest.
func (sb *Pool) oldestLocked() launchKey {
	var oldest launchKey
	var since time.Time
	for k, s := range sb.idle {
		if since.IsZero() || s.since.Before(since) {
			oldest, since = k, s.since
		}
	}
	return oldest
}

// dropLocked ends key's idle standby.
func (sb *Pool) dropLocked(key launchKey) {
	if s := sb.idle[key]; s != nil {
		s.timer.Stop()
		s.held.Discard()
		delete(sb.idle, key)
	}
}

// Prune ends the idle standbys whose snapshot is no longer the cache's: the
// caller calls it when it forgets a scope's snapshots. A fill prunes too,
// which covers snapshots evicted or replaced by a newer capture.
func (sb *Pool) Prune() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.pruneLocked()
}

func (sb *Pool) pruneLocked() {
	for k := range sb.idle {
		if !sb.current(k.snap) {
			sb.dropLocked(k)
		}
	}
}
