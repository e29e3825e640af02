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
			p, err := h.Release(spec, shellsnap.StandbyMessage(in.Snapshot, script))
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
