package standby

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

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// Options bounds the standby shells.
//
// A launch (the shell, cwd, environment and output bound of a command) gets
// a standby once it repeats: its command starts one for the next if the same
// launch ran within Idle before. A client whose every command has an
// environment of its own costs no standby.
type Options struct {
	// Max is how many idle standbys may wait at once. The least recently
	// idle one is ended for a new one. Zero disables them. Each holds its
	// snapshot's state in a process of its own (about 4.5 MiB for a profile
	// of 500 functions): Max bounds their memory.
	Max int
	// PerLaunch is how many standbys one launch may keep: a launch whose
	// command finds none ready (two at once, or one right after another)
	// keeps one more, up to PerLaunch, and one fewer each time one of its
	// standbys waited Idle for nothing. Zero means 2.
	PerLaunch int
	// Fills is how many standbys may restore at once, which bounds the CPU
	// the pool takes from commands. Zero means 1.
	Fills int
	// Idle ends a standby that has waited this long, and is how long a
	// launch is remembered. Zero means a minute.
	Idle time.Duration
	// Meter records the pool's metrics; nil records nothing.
	Meter metric.Meter
}

// maxSeenLaunches bounds the launches remembered for Options' rule.
const maxSeenLaunches = 256

// launchID identifies a launch: the SHA-256 of its argv[0], cwd, output
// bound, sandbox and environment but BASH_ENV (the snapshot's restore
// file), so that no two
// launches share one (a standby must never run a command with another's
// environment, nor under another's sandbox: a standby is held under its
// launch's sandbox, exec.Manager.Hold, which its command inherits).
type launchID [sha256.Size]byte

// launchKey is what a standby serves: a launch whose replay used snap.
type launchKey struct {
	snap   *shellsnap.Snapshot
	launch launchID
}

// standby is one idle standby shell.
type standby struct {
	held  *exec.Held
	dir   os.FileInfo // the cwd it was started in
	since time.Time
	timer *time.Timer // ends it after Options.Idle
}

// Pool keeps at most Options.Max idle standby shells, and refills a
// launch's after every use of it (docs/design/standby.md#the-pool).
type Pool struct {
	procs  *exec.Manager
	opts   Options
	claims metric.Int64Counter
	// hit, miss and unfit count the commands the claims counter records.
	hit, miss, unfit atomic.Int64
	// current reports whether a snapshot is still the cache's: a standby of
	// a forgotten, evicted or replaced one is never started or kept.
	current func(*shellsnap.Snapshot) bool

	// fills holds a token for each standby restoring now (Options.Fills).
	fills chan struct{}

	mu sync.Mutex
	// idle holds each launch's idle standbys, the most recent last.
	idle    map[launchKey][]*standby
	filling map[launchKey]int
	// want is how many standbys each launch with one keeps (Options.PerLaunch).
	want     map[launchKey]int
	seen     map[launchID]time.Time     // when each launch last ran
	builtins map[string]map[string]bool // by shell name and path, learnt by the first fill
}

// New returns an empty Pool whose standbys are held processes of procs
// (exec.Manager.Hold). current reports whether a snapshot is still the
// cache's (shellsnap.Cache.Holds).
func New(procs *exec.Manager, current func(*shellsnap.Snapshot) bool, opts Options) (*Pool, error) {
	if opts.Idle <= 0 {
		opts.Idle = time.Minute
	}
	if opts.PerLaunch <= 0 {
		opts.PerLaunch = 2
	}
	if opts.Fills <= 0 {
		opts.Fills = 1
	}
	m := opts.Meter
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	sb := &Pool{procs: procs, opts: opts, current: current, fills: make(chan struct{}, opts.Fills), idle: make(map[launchKey][]*standby), filling: make(map[launchKey]int), want: make(map[launchKey]int), seen: make(map[launchID]time.Time), builtins: make(map[string]map[string]bool)}
	var err error
	if sb.claims, err = m.Int64Counter("snapexec.standby.commands", metric.WithUnit("{command}"),
		metric.WithDescription("Snapshot commands of a launch a standby shell can serve, by result: hit (one ran it), miss (none was ready) or unfit (one was ready, but the script is one only a fresh replay runs exactly).")); err != nil {
		return nil, err
	}
	if _, err = m.Int64ObservableGauge("snapexec.standby.idle", metric.WithUnit("{shell}"),
		metric.WithDescription("Standby shells waiting for a command."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			sb.mu.Lock()
			defer sb.mu.Unlock()
			o.Observe(int64(sb.idleLocked()))
			return nil
		})); err != nil {
		return nil, err
	}
	return sb, nil
}

// refillDelay is how long a command may keep its launch's next standby
// from starting: it starts when the command ends, or after this long.
const refillDelay = 100 * time.Millisecond

// Start starts spec, the command Replay built from in, in the standby that
// waits for its launch if there is one, and as a new process otherwise
// (exec.Manager.Start, whose errors it returns). Either way the launch gets a new
// standby for its next command, once this one has ended (or run for
// refillDelay), so that the standby's restore does not compete with the
// command for the CPU. in is nil when no snapshot was replayed: spec just
// starts. It reports whether a standby ran the command.
func (sb *Pool) Start(ctx context.Context, spec exec.Spec, in *shellsnap.ReplayInput) (*exec.Process, bool, error) {
	// A standby shell runs on pipes, under its own argv[0].
	if sb.opts.Max <= 0 || in == nil || len(spec.Stdin) > 0 || spec.PipeStdin || spec.TTY != nil || spec.Arg0 != "" || !serves(*in) {
		p, err := sb.procs.Start(spec)
		return p, false, err
	}
	key := keyOf(in.Snapshot, spec, in.Snapshot.PassedThrough(in.Env))
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
func (sb *Pool) startLaunch(ctx context.Context, key launchKey, spec exec.Spec, in *shellsnap.ReplayInput) (*exec.Process, bool, error) {
	result := "miss"
	sb.mu.Lock()
	waiting := len(sb.idle[key]) > 0
	builtins := sb.builtins[in.Shell+" "+spec.Argv[0]] // learnt by the fill that started the one waiting
	sb.mu.Unlock()
	if waiting {
		// The script decides; an unfit one leaves the standby to the next.
		script, exact := tailScript(*in, spec.Dir, spec.Env, builtins)
		if !exact {
			result = "unfit"
		} else if h := sb.take(key, spec.Dir); h != nil {
			p, err := h.Release(spec, goAhead(*in, script))
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
	if result == "miss" {
		// None was ready for it, none waiting or another command took the
		// one that was: a launch that had a standby and came again before
		// the next was ready keeps one more from now on.
		sb.mu.Lock()
		if n, ok := sb.want[key]; ok {
			sb.want[key] = min(n+1, sb.opts.PerLaunch)
		}
		sb.mu.Unlock()
	}
	sb.count(ctx, result)
	p, err := sb.procs.Start(spec)
	return p, false, err
}

// count records one command of a launch a standby can serve.
func (sb *Pool) count(ctx context.Context, result string) {
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

// Stats is what /stats shows of the standby shells: how many may wait and
// wait now, and the commands of launches a standby can serve, by result.
type Stats struct {
	Max, Idle        int
	Hit, Miss, Unfit int64
}

// Stats returns the pool's figures now.
func (sb *Pool) Stats() Stats {
	sb.mu.Lock()
	idle := sb.idleLocked()
	sb.mu.Unlock()
	return Stats{Max: sb.opts.Max, Idle: idle, Hit: sb.hit.Load(), Miss: sb.miss.Load(), Unfit: sb.unfit.Load()}
}

// keyOf is the launch of spec, whose replay used snap: the variables a
// replay of snap only passes through (passed, Snapshot.PassedThrough) are
// not part of it, since the go-ahead brings them.
func keyOf(snap *shellsnap.Snapshot, spec exec.Spec, passed map[string]bool) launchKey {
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
	field(spec.Sandbox.Key())
	for _, kv := range spec.Env {
		// BASH_ENV names the snapshot's restore file: it is the snapshot,
		// which the key holds, so a launch stays the same launch when its
		// snapshot is captured again.
		name, _, _ := strings.Cut(kv, "=")
		if !passed[name] && name != "BASH_ENV" {
			field(kv)
		}
	}
	k := launchKey{snap: snap}
	h.Sum(k.launch[:0])
	return k
}

// idleLocked counts the idle standbys.
func (sb *Pool) idleLocked() int {
	n := 0
	for _, ss := range sb.idle {
		n += len(ss)
	}
	return n
}

// take removes and returns the most recently idle standby of key, or nil,
// so that those a launch no longer needs are the ones that wait Idle. A
// standby whose cwd is no longer the directory at that path (removed, or
// replaced) is ended instead: a fresh start finds out what is there now.
func (sb *Pool) take(key launchKey, dir string) *exec.Held {
	sb.mu.Lock()
	ss := sb.idle[key]
	if len(ss) == 0 {
		sb.mu.Unlock()
		return nil
	}
	s := ss[len(ss)-1]
	s.timer.Stop()
	sb.removeLocked(key, s)
	sb.mu.Unlock()
	if s.dir != nil {
		if now, err := os.Stat(dir); err != nil || !os.SameFile(now, s.dir) {
			s.held.Discard()
			return nil
		}
	}
	return s.held
}
