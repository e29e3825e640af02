package standby

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// refill starts standbys for key in the background, if its launch repeats
// (Options), until as many wait or are starting as the launch keeps.
func (sb *Pool) refill(key launchKey, spec exec.Spec, in *shellsnap.ReplayInput) {
	if !sb.current(key.snap) {
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.seenLocked(key.launch) {
		return
	}
	want := max(sb.want[key], 1)
	sb.want[key] = want
	for n := len(sb.idle[key]) + sb.filling[key]; n < want; n++ {
		sb.filling[key]++
		go sb.fill(key, spec, *in)
	}
}

// fill spawns one of key's standbys, once one of Options.Fills is free,
// and puts it among the idle ones, ending the least recently idle one when
// there are Max. The fill is its restore: the token is held until the
// standby waits, or for at most fillTime.
func (sb *Pool) fill(key launchKey, spec exec.Spec, in shellsnap.ReplayInput) {
	sb.fills <- struct{}{}
	sb.learnBuiltins(in.Shell, spec.Argv[0])
	h, dir, err := sb.spawn(spec, in)
	if err == nil {
		waitRestored(h)
	}
	<-sb.fills
	// Pruned once it is in the map, so that a prune running meanwhile
	// either sees it or is seen here.
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.filling[key]--; sb.filling[key] <= 0 {
		delete(sb.filling, key)
	}
	if err != nil {
		return // shutting down, or the launch cannot start: its commands will say why
	}
	if sb.idleLocked() >= sb.opts.Max {
		sb.dropLocked(sb.oldestLocked())
	}
	s := &standby{held: h, dir: dir, since: time.Now()}
	s.timer = time.AfterFunc(sb.opts.Idle, func() {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		if slices.Contains(sb.idle[key], s) {
			// It waited for nothing: the launch keeps one fewer.
			sb.want[key] = max(sb.want[key]-1, 1)
			sb.dropLocked(key, s)
		}
	})
	sb.idle[key] = append(sb.idle[key], s)
	sb.pruneLocked() // this one too, if its snapshot went meanwhile
}

// Hold holds spec's program, a standby shell of another kind (a session's:
// shellsnap.SessionLaunch.Standby), as the pool holds its own: once one of
// Options.Fills is free, and returns once it restored and waits for its
// go-ahead (or fillTime passed), so that the CPU its restore takes is
// bounded with theirs. The caller keeps it and bounds how many.
func (sb *Pool) Hold(spec exec.Spec) (*exec.Held, error) {
	sb.fills <- struct{}{}
	defer func() { <-sb.fills }()
	h, err := sb.procs.Hold(spec)
	if err == nil {
		waitRestored(h)
	}
	return h, err
}

// fillTime bounds how long a fill holds its token (Options.Fills): a
// standby whose restore takes longer restores on beside the next one.
const fillTime = 2 * time.Second

// waitRestored returns once h has restored its state and waits for its
// go-ahead (its wait line closes its fd 4: exec.Held.Ready), has ended, or
// fillTime has passed.
func waitRestored(h *exec.Held) {
	t := time.NewTimer(fillTime)
	defer t.Stop()
	select {
	case <-h.Ready():
	case <-h.Done():
	case <-t.C:
	}
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

// learnBuiltins lists the builtins of the shell (bash or zsh) at path
// once; without them no standby serves its commands (tailScript).
func (sb *Pool) learnBuiltins(shell, path string) {
	sb.mu.Lock()
	_, known := sb.builtins[shell+" "+path]
	sb.mu.Unlock()
	if known {
		return
	}
	builtins, err := shellBuiltins(context.Background(), sb.procs, shell, path)
	if err != nil {
		return // tried again at the next fill
	}
	sb.mu.Lock()
	sb.builtins[shell+" "+path] = builtins
	sb.mu.Unlock()
}

// oldestLocked returns the standby idle the longest, and its key.
func (sb *Pool) oldestLocked() (launchKey, *standby) {
	var oldest launchKey
	var s *standby
	for k, ss := range sb.idle {
		for _, c := range ss {
			if s == nil || c.since.Before(s.since) {
				oldest, s = k, c
			}
		}
	}
	return oldest, s
}

// dropLocked ends s, an idle standby of key.
func (sb *Pool) dropLocked(key launchKey, s *standby) {
	if s != nil && sb.removeLocked(key, s) {
		s.timer.Stop()
		s.held.Discard()
	}
}

// removeLocked removes s from key's idle standbys, and reports whether it
// was one.
func (sb *Pool) removeLocked(key launchKey, s *standby) bool {
	ss := sb.idle[key]
	i := slices.Index(ss, s)
	if i < 0 {
		return false
	}
	if ss = slices.Delete(ss, i, i+1); len(ss) == 0 {
		delete(sb.idle, key)
	} else {
		sb.idle[key] = ss
	}
	return true
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
	for k, ss := range sb.idle {
		if !sb.current(k.snap) {
			for _, s := range slices.Clone(ss) {
				sb.dropLocked(k, s)
			}
		}
	}
	for k := range sb.want {
		if !sb.current(k.snap) || len(sb.want) > maxSeenLaunches && len(sb.idle[k])+sb.filling[k] == 0 {
			delete(sb.want, k)
		}
	}
}
