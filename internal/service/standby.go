package service

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
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
type StandbyOptions struct {
	// Max is how many idle standbys may wait at once, one per launch (the
	// snapshot, shell, cwd, environment and output bound of a command). The
	// least recently idle one is ended for a new launch. Zero disables them.
	Max int
	// Idle ends a standby that has waited this long. Zero means a minute.
	Idle time.Duration
}

// standbyKey is the launch a standby serves: a command whose snapshot
// replay gives exactly this process.
type standbyKey struct {
	snap   *shellsnap.Snapshot
	launch string // argv[0], cwd, output bound and environment but the state chunks
}

// standby is one idle standby shell.
type standby struct {
	held  *exec.Held
	scope string
	since time.Time
	timer *time.Timer // ends it after StandbyOptions.Idle
}

// standbys keeps at most opts.Max idle standby shells, and refills a launch's
// after every use of it.
type standbys struct {
	procs  *exec.Manager
	opts   StandbyOptions
	claims metric.Int64Counter

	mu      sync.Mutex
	idle    map[standbyKey]*standby
	filling map[standbyKey]bool
}

func newStandbys(procs *exec.Manager, opts StandbyOptions, m metric.Meter) (*standbys, error) {
	if opts.Idle <= 0 {
		opts.Idle = time.Minute
	}
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	sb := &standbys{procs: procs, opts: opts, idle: make(map[standbyKey]*standby), filling: make(map[standbyKey]bool)}
	var err error
	if sb.claims, err = m.Int64Counter("snapexec.standby.commands",
		metric.WithDescription("Snapshot commands a standby shell could serve, by result: hit (it ran in one) or miss (none was ready).")); err != nil {
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

// start starts spec, replayed from in, in the standby that waits for its
// launch if there is one, and in a new process otherwise. Either way the
// launch gets a new standby for its next command. It reports whether a
// standby ran it.
func (sb *standbys) start(ctx context.Context, spec exec.Spec, in *shellsnap.ReplayInput, scope string) (*exec.Process, bool, error) {
	if sb.opts.Max <= 0 || in == nil || len(spec.Stdin) > 0 || spec.PipeStdin || !shellsnap.StandbyServes(*in) {
		p, err := sb.procs.Start(spec)
		return p, false, err
	}
	key := standbyKeyOf(in.Snapshot, spec)
	defer sb.refill(key, spec, in, scope)
	if h := sb.take(key); h != nil {
		release := spec
		if r, ok := spec.Tag.(shellsnap.Receipt); ok {
			r.Standby = true
			release.Tag = r
		}
		p, err := h.Release(release, shellsnap.StandbyMessage(in.Snapshot, in.Command[2]))
		if err == nil {
			sb.claims.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "hit")))
			return p, true, nil
		}
		h.Discard()
		if !errors.Is(err, exec.ErrNotHeld) {
			return nil, false, err // the table's answer, as Start would give it
		}
	}
	sb.claims.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "miss")))
	p, err := sb.procs.Start(spec)
	return p, false, err
}

// standbyKeyOf is the launch of spec, whose replay used snap.
func standbyKeyOf(snap *shellsnap.Snapshot, spec exec.Spec) standbyKey {
	var b strings.Builder
	b.WriteString(spec.Argv[0])
	b.WriteByte(0)
	b.WriteString(spec.Dir)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(spec.MaxOutputBytes))
	for _, kv := range spec.Env {
		if !strings.HasPrefix(kv, shellsnap.StateEnvPrefix) {
			b.WriteByte(0)
			b.WriteString(kv)
		}
	}
	return standbyKey{snap: snap, launch: b.String()}
}

// take removes and returns the idle standby of key, or nil.
func (sb *standbys) take(key standbyKey) *exec.Held {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	s := sb.idle[key]
	if s == nil {
		return nil
	}
	s.timer.Stop()
	delete(sb.idle, key)
	return s.held
}

// refill starts a standby for key in the background unless one waits or is
// starting.
func (sb *standbys) refill(key standbyKey, spec exec.Spec, in *shellsnap.ReplayInput, scope string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.idle[key] != nil || sb.filling[key] {
		return
	}
	sb.filling[key] = true
	go sb.fill(key, spec, *in, scope)
}

// fill spawns key's standby and puts it among the idle ones, ending the
// least recently idle one when there are Max.
func (sb *standbys) fill(key standbyKey, spec exec.Spec, in shellsnap.ReplayInput, scope string) {
	argv, env, _ := shellsnap.Standby(in)
	h, err := sb.procs.Hold(exec.Spec{Argv: argv, Dir: spec.Dir, Env: envpolicy.List(env), MaxOutputBytes: spec.MaxOutputBytes})
	sb.mu.Lock()
	defer sb.mu.Unlock()
	delete(sb.filling, key)
	if err != nil {
		return // shutting down, or the launch cannot start: its commands will say why
	}
	if len(sb.idle) >= sb.opts.Max {
		sb.dropLocked(sb.oldestLocked())
	}
	s := &standby{held: h, scope: scope, since: time.Now()}
	s.timer = time.AfterFunc(sb.opts.Idle, func() {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		if sb.idle[key] == s {
			sb.dropLocked(key)
		}
	})
	sb.idle[key] = s
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

// forget ends the idle standbys of scope.
func (sb *standbys) forget(scope string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for k, s := range sb.idle {
		if s.scope == scope {
			sb.dropLocked(k)
		}
	}
}
