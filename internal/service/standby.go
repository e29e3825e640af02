package service

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// StandbyOptions bounds the standby shells: bash processes that restored a
// snapshot before their command came (shellsnap.Standby), so that a warm
// command costs a go-ahead instead of a shell start and a restore.
//
// A launch (the shell, cwd, environment and output bound of a command) gets
// a standby once it repeats: its command starts one for the next if the same
// launch ran within Idle before. A client whose every command has an
// environment of its own costs no standby.
type StandbyOptions struct {
	// Max is how many idle standbys may wait at once, one per launch. The
	// least recently idle one is ended for a new launch. Zero disables them.
	Max int
	// Idle ends a standby that has waited this long, and is how long a
	// launch is remembered. Zero means a minute.
	Idle time.Duration
}

// maxSeenLaunches bounds the launches remembered for StandbyOptions' rule.
const maxSeenLaunches = 256

// launchID identifies a launch: the SHA-256 of its argv[0], cwd, output
// bound and environment but the state chunks, so that no two launches share
// one (a standby must never run a command with another's environment).
type launchID [sha256.Size]byte

// standbyKey is what a standby serves: a launch whose replay used snap.
type standbyKey struct {
	snap   *shellsnap.Snapshot
	launch launchID
}

// standby is one idle standby shell.
type standby struct {
	held  *exec.Held
	dir   os.FileInfo // the cwd it was started in
	since time.Time
	timer *time.Timer // ends it after StandbyOptions.Idle
}

// standbys keeps at most opts.Max idle standby shells, and refills a launch's
// after every use of it.
type standbys struct {
	procs  *exec.Manager
	opts   StandbyOptions
	claims metric.Int64Counter
	// hit, miss and unfit count the commands the claims counter records.
	hit, miss, unfit atomic.Int64
	// current reports whether a snapshot is still the cache's: a standby of
	// a forgotten, evicted or replaced one is never started or kept.
	current func(*shellsnap.Snapshot) bool

	mu       sync.Mutex
	idle     map[standbyKey]*standby
	filling  map[standbyKey]bool
	seen     map[launchID]time.Time     // when each launch last ran
	builtins map[string]map[string]bool // by shell path, learnt by the first fill
}

func newStandbys(procs *exec.Manager, opts StandbyOptions, m metric.Meter, current func(*shellsnap.Snapshot) bool) (*standbys, error) {
	if opts.Idle <= 0 {
		opts.Idle = time.Minute
	}
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	sb := &standbys{procs: procs, opts: opts, current: current, idle: make(map[standbyKey]*standby), filling: make(map[standbyKey]bool), seen: make(map[launchID]time.Time), builtins: make(map[string]map[string]bool)}
	var err error
	if sb.claims, err = m.Int64Counter("snapexec.standby.commands",
		metric.WithDescription("Snapshot commands of a launch a standby shell can serve, by result: hit (one ran it), miss (none was ready) or unfit (one was ready, but the script is one only a fresh replay runs exactly).")); err != nil {
		return nil, err
	}
	if _, err = m.Int64ObservableGauge("snapexec.standby.idle",
		metric.WithDescription("Standby shells waiting for a command."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			sb.mu.Lock()
			defer sb.mu.Unlock()
			o.Observe(int64(len(sb.idle)))
			return nil
		})); err != nil {
		return nil, err
	}
	return sb, nil
}

// refillDelay is how long a command may keep its launch's next standby
// from starting: it starts when the command ends, or after this long.
const refillDelay = 100 * time.Millisecond

// start starts spec, replayed from in, in the standby that waits for its
// launch if there is one, and in a new process otherwise. Either way the
// launch gets a new standby for its next command, once this one has ended
// (or run for refillDelay), so that the standby's restore does not compete
// with the command for the CPU. It reports whether a standby ran it.
func (sb *standbys) start(ctx context.Context, spec exec.Spec, in *shellsnap.ReplayInput) (*exec.Process, bool, error) {
	if sb.opts.Max <= 0 || in == nil || len(spec.Stdin) > 0 || spec.PipeStdin || !shellsnap.StandbyServes(*in) {
		p, err := sb.procs.Start(spec)
		return p, false, err
	}
	key := standbyKeyOf(in.Snapshot, spec)
	p, standby, err := sb.startLaunch(ctx, key, spec, in)
	if err != nil {
		return nil, false, err
	}
	go func() {
		t := time.NewTimer(refillDelay)
		defer t.Stop()
		select {
		case <-p.Done():
		case <-t.C:
		}
		sb.refill(key, spec, in)
	}()
	return p, standby, nil
}

// startLaunch releases key's standby for spec, or starts spec anew when
// none waits.
func (sb *standbys) startLaunch(ctx context.Context, key standbyKey, spec exec.Spec, in *shellsnap.ReplayInput) (*exec.Process, bool, error) {
	result := "miss"
	sb.mu.Lock()
	waiting := sb.idle[key] != nil
	builtins := sb.builtins[spec.Argv[0]] // learnt by the fill that started the one waiting
	sb.mu.Unlock()
	if waiting {
		// The script decides; an unfit one leaves the standby to the next.
		script, exact := shellsnap.StandbyScript(*in, spec.Dir, spec.Env, builtins)
		if !exact {
			result = "unfit"
		} else if h := sb.take(key, spec.Dir); h != nil {
			release := spec
			if r, ok := spec.Tag.(shellsnap.Receipt); ok {
				r.Standby = true
				release.Tag = r
			}
			p, err := h.Release(release, shellsnap.StandbyMessage(in.Snapshot, script))
			if err == nil {
				sb.count(ctx, "hit")
				return p, true, nil
			}
			h.Discard()
			if !errors.Is(err, exec.ErrNotHeld) {
				return nil, false, err // the table's answer, as Start would give it
			}
		}
	}
	sb.count(ctx, result)
	p, err := sb.procs.Start(spec)
	return p, false, err
}

// count records one command of a launch a standby can serve.
func (sb *standbys) count(ctx context.Context, result string) {
	switch result {
	case "hit":
		sb.hit.Add(1)
	case "miss":
		sb.miss.Add(1)
	default:
		sb.unfit.Add(1)
	}
	sb.claims.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
}

// StandbyStats is what /stats shows of the standby shells.
type StandbyStats struct {
	Max, Idle        int
	Hit, Miss, Unfit int64
}

func (sb *standbys) stats() StandbyStats {
	sb.mu.Lock()
	idle := len(sb.idle)
	sb.mu.Unlock()
	return StandbyStats{Max: sb.opts.Max, Idle: idle, Hit: sb.hit.Load(), Miss: sb.miss.Load(), Unfit: sb.unfit.Load()}
}

// standbyKeyOf is the launch of spec, whose replay used snap.
func standbyKeyOf(snap *shellsnap.Snapshot, spec exec.Spec) standbyKey {
	h := sha256.New()
	// Each field is prefixed by its length, so that no two launches hash
	// the same fields.
	field := func(s string) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	field(spec.Argv[0])
	field(spec.Dir)
	field(strconv.Itoa(spec.MaxOutputBytes))
	for _, kv := range spec.Env {
		if !strings.HasPrefix(kv, shellsnap.StateEnvPrefix) {
			field(kv)
		}
	}
	k := standbyKey{snap: snap}
	h.Sum(k.launch[:0])
	return k
}

// take removes and returns the idle standby of key, or nil. A standby whose
// cwd is no longer the directory at that path (removed, or replaced) is
// ended instead: a fresh start finds out what is there now.
func (sb *standbys) take(key standbyKey, dir string) *exec.Held {
	sb.mu.Lock()
	s := sb.idle[key]
	if s == nil {
		sb.mu.Unlock()
		return nil
	}
	s.timer.Stop()
	delete(sb.idle, key)
	sb.mu.Unlock()
	if s.dir != nil {
		if now, err := os.Stat(dir); err != nil || !os.SameFile(now, s.dir) {
			s.held.Discard()
			return nil
		}
	}
	return s.held
}

// refill starts a standby for key in the background if its launch repeats
// (StandbyOptions) and no standby waits for it or is starting.
func (sb *standbys) refill(key standbyKey, spec exec.Spec, in *shellsnap.ReplayInput) {
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
func (sb *standbys) fill(key standbyKey, spec exec.Spec, in shellsnap.ReplayInput) {
	sb.learnBuiltins(spec.Argv[0])
	var dir os.FileInfo
	if spec.Dir != "" {
		var err error
		if dir, err = os.Stat(spec.Dir); err != nil {
			sb.mu.Lock()
			delete(sb.filling, key)
			sb.mu.Unlock()
			return
		}
	}
	argv, env, _ := shellsnap.Standby(in)
	h, err := sb.procs.Hold(exec.Spec{Argv: argv, Dir: spec.Dir, Env: envpolicy.List(env), MaxOutputBytes: spec.MaxOutputBytes})
	if err != nil {
		sb.mu.Lock()
		delete(sb.filling, key)
		sb.mu.Unlock()
		return // shutting down, or the launch cannot start: its commands will say why
	}
	// Pruned once it is in the map, so that a prune running meanwhile
	// either sees it or is seen here.
	sb.mu.Lock()
	defer sb.mu.Unlock()
	delete(sb.filling, key)
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

// seenLocked records that launch runs now and reports whether it ran within
// the idle time before.
func (sb *standbys) seenLocked(launch launchID) bool {
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
// no standby serves its commands (shellsnap.StandbyScript).
func (sb *standbys) learnBuiltins(path string) {
	sb.mu.Lock()
	_, known := sb.builtins[path]
	sb.mu.Unlock()
	if known {
		return
	}
	builtins, err := shellsnap.ShellBuiltins(context.Background(), path)
	if err != nil {
		return // tried again at the next fill
	}
	sb.mu.Lock()
	sb.builtins[path] = builtins
	sb.mu.Unlock()
}

// oldestLocked returns the key of the standby idle the longest.
func (sb *standbys) oldestLocked() standbyKey {
	var oldest standbyKey
	var since time.Time
	for k, s := range sb.idle {
		if since.IsZero() || s.since.Before(since) {
			oldest, since = k, s.since
		}
	}
	return oldest
}

// dropLocked ends key's idle standby.
func (sb *standbys) dropLocked(key standbyKey) {
	if s := sb.idle[key]; s != nil {
		s.timer.Stop()
		s.held.Discard()
		delete(sb.idle, key)
	}
}

// prune ends the idle standbys whose snapshot is no longer the cache's.
func (sb *standbys) prune() {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.pruneLocked()
}

func (sb *standbys) pruneLocked() {
	for k := range sb.idle {
		if !sb.current(k.snap) {
			sb.dropLocked(k)
		}
	}
}
