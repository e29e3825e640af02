package exec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// Options configures a Manager.
type Options struct {
	// Grace is how long a group has between SIGTERM and SIGKILL.
	Grace time.Duration
	// Drain is how long descendants may keep a finished child's pipes open before
	// the rest of its group is ended.
	Drain time.Duration
	// MaxOutputBytes is the default per-stream bound of a result's output.
	MaxOutputBytes int
}

// Manager starts processes, keeps track of the running ones, and ends them all
// on shutdown.
type Manager struct {
	opts Options

	mu       sync.Mutex
	running  map[*Process]struct{}
	stopping bool
}

// NewManager returns a Manager with opts; zero fields get defaults.
func NewManager(opts Options) *Manager {
	if opts.Grace <= 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.Drain <= 0 {
		opts.Drain = 100 * time.Millisecond
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = 1 << 20
	}
	return &Manager{opts: opts, running: make(map[*Process]struct{})}
}

// Start spawns spec. The process runs until it ends by itself, by its limits, or
// by Terminate; it is ended with status shutdown by Shutdown.
func (m *Manager) Start(spec Spec) (*Process, error) {
	if m.isStopping() {
		return nil, ErrShuttingDown
	}
	// Spawn outside the lock: fork and exec are the slow part, and concurrent
	// requests must not queue behind each other.
	p, err := start(newID(), spec, m.opts.Grace, m.opts.Drain, m.opts.MaxOutputBytes)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.running[p] = struct{}{}
	stopping := m.stopping
	m.mu.Unlock()
	if stopping {
		// Shutdown began while we spawned and did not see this one.
		p.Terminate(StatusShutdown)
	}
	go func() {
		<-p.Done()
		m.mu.Lock()
		delete(m.running, p)
		m.mu.Unlock()
	}()
	return p, nil
}

func (m *Manager) isStopping() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopping
}

// Run starts spec and waits for it. If ctx ends first (the client went away),
// the process group is terminated and Run still returns its result.
func (m *Manager) Run(ctx context.Context, spec Spec) (*Process, error) {
	p, err := m.Start(spec)
	if err != nil {
		return nil, err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Terminate(StatusTerminated)
		<-p.Done()
	}
	return p, nil
}

// Running returns how many processes are running.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running)
}

// Shutdown stops starting processes, terminates every running group with
// status shutdown, and waits for them until ctx ends.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.stopping = true
	m.mu.Unlock()
	for {
		m.mu.Lock()
		procs := make([]*Process, 0, len(m.running))
		for p := range m.running {
			procs = append(procs, p)
		}
		m.mu.Unlock()
		if len(procs) == 0 {
			return nil
		}
		for _, p := range procs {
			p.Terminate(StatusShutdown)
		}
		for _, p := range procs {
			select {
			case <-p.Done():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		// A process removes itself from running just after Done; yield to it.
		time.Sleep(time.Millisecond)
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "p-" + hex.EncodeToString(b[:])
}
