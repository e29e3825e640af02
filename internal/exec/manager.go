package exec

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// Options configures a Manager. Zero fields get the defaults given.
//
// What the manager holds is bounded whatever the number of processes served.
// A running process holds at most OutputRingBytes of output data in its ring
// plus 64 bytes per chunk (so at most OutputRingChunks*64 more), and, for its
// result, at most 2*MaxOutputBytes (or twice its spec's MaxOutputBytes). A
// finished process is retained for Retention; all the finished ones together
// hold at most MaxRetained processes and MaxRetainedOutputBytes of output,
// counted as ring data plus 64 bytes per chunk plus the head and tail bytes a
// result keeps beside the ring (none when the ring holds the stream whole,
// since the result is then derived from the ring) plus the write ids a
// PipeStdin process remembers (at most 4096). Beyond either bound the
// oldest finished are forgotten first. With the defaults the retained output
// is at most 256 MiB; a retained process without output costs about 3 KiB
// more. Measured (TestRetainedMemoryBound): 200 retained processes of 1 MiB
// output each hold 201 MiB of heap, 1030 KiB a process. A forgotten process no
// longer counts, though a caller that still holds it keeps its memory alive.
type Options struct {
	// Reaper, when set, is kicked whenever a group outlives its leader, so
	// that its members are reaped as soon as they die.
	Reaper *Reaper
	// Grace is how long a group has between SIGTERM and SIGKILL. Default 2 s.
	Grace time.Duration
	// Drain is how long descendants may keep a finished child's pipes open before
	// the rest of its group is ended. Default 100 ms.
	Drain time.Duration
	// MaxOutputBytes is the default per-stream bound of a result's output.
	// Default 1 MiB.
	MaxOutputBytes int
	// OutputRingBytes bounds the output data a process's ring retains for Read,
	// both streams together; the oldest chunks are evicted first. Default 1 MiB,
	// as the reference keeps (docs/design/processes.md#output).
	OutputRingBytes int
	// OutputRingChunks bounds the number of chunks a ring retains. Default 50,000.
	OutputRingChunks int
	// Retention is how long a finished process stays in the table (Get, List,
	// Read, and its id taken). Default 30 s.
	Retention time.Duration
	// MaxRetained bounds the number of finished processes retained. Default 256.
	MaxRetained int
	// MaxRetainedOutputBytes bounds the output bytes all retained processes hold
	// together, as described above. Default 256 MiB.
	MaxRetainedOutputBytes int64
	// MaxRunning bounds the processes running (or starting) at once: beyond it
	// Start returns ErrTooManyProcesses. Zero means no bound.
	MaxRunning int
	// Sandbox confines the processes whose Spec asks for it; nil refuses
	// every policy that confines anything (a *sandbox.UnavailableError).
	Sandbox *sandbox.Sandbox
}

// Manager starts processes, keeps the table of running and retained ones, and
// ends them all on shutdown.
type Manager struct {
	opts Options

	mu        sync.Mutex
	procs     map[string]*Process // running and retained; nil: id reserved by a Start in progress
	running   map[*Process]struct{}
	unlisted  map[*Process]struct{} // running outside the table: spawned by Spawn, or by Hold and not yet released
	starting  int
	nextOrder uint64
	finished  []*Process // retained, oldest first: finished[head:]
	head      int
	retained  int64       // footprint of the retained processes
	sweep     *time.Timer // fires when the oldest retained process expires
	sweepAt   time.Time
	stopping  bool
	forget    func(*Process) // OnForget's

	// null is /dev/null, opened once for the stdin (and a discarded
	// stderr) of every child that has no pipe there: os/exec would open and
	// close it for each spawn, 2.6% of the server's CPU under a load of
	// /exec /bin/true (perf). Its zero value lets os/exec do that.
	null nullDevice
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
	if opts.OutputRingBytes <= 0 {
		opts.OutputRingBytes = 1 << 20
	}
	if opts.OutputRingChunks <= 0 {
		opts.OutputRingChunks = 50_000
	}
	if opts.Retention <= 0 {
		opts.Retention = 30 * time.Second
	}
	if opts.MaxRetained <= 0 {
		opts.MaxRetained = 256
	}
	if opts.MaxRetainedOutputBytes <= 0 {
		opts.MaxRetainedOutputBytes = 256 << 20
	}
	return &Manager{
		null:     openNull(),
		opts:     opts,
		procs:    make(map[string]*Process),
		running:  make(map[*Process]struct{}),
		unlisted: make(map[*Process]struct{}),
	}
}

// Start spawns spec. The process runs until it ends by itself, by its limits, or
// by Terminate; it is ended with status shutdown by Shutdown. It returns
// ErrProcessExists when spec.ID is taken by a running or retained process, and
// ErrTooManyProcesses when MaxRunning processes run.
func (m *Manager) Start(spec Spec) (*Process, error) {
	id, err := m.reserve(spec.ID)
	if err != nil {
		return nil, err
	}
	// Spawn outside the lock: fork and exec are the slow part, and concurrent
	// requests must not queue behind each other.
	p, _, err := start(id, spec, m.procConfig(m.register, false))
	if err := m.spawned(id, p, err); err != nil {
		return nil, err
	}
	return p, nil
}

// Spawn starts spec's program as Start does, for a caller that keeps the
// process to itself: it is unlisted, that is not in the table (Get and List do
// not show it, it takes no id: spec's ID is ignored), and it does not count
// against MaxRunning. Like every process it leads a group of its own, its
// limits apply, Terminate and Wait end it with the group kill, Shutdown ends
// it with status shutdown, and the Reaper knows its group. The manager
// forgets it once it has ended. A shell snapshot capture is such a process.
func (m *Manager) Spawn(spec Spec) (*Process, error) {
	p, _, err := m.spawnUnlisted(spec, false)
	return p, err
}

// spawnUnlisted spawns spec as an unlisted process, held (held.go) or not.
func (m *Manager) spawnUnlisted(spec Spec, hold bool) (*Process, heldEnds, error) {
	m.mu.Lock()
	if m.stopping {
		m.mu.Unlock()
		return nil, heldEnds{}, ErrShuttingDown
	}
	m.starting++
	m.mu.Unlock()
	p, held, err := start("", spec, m.procConfig(m.registerUnlisted, hold))
	if err := m.spawned("", p, err); err != nil {
		closeAll(held.release, held.ready)
		return nil, heldEnds{}, err
	}
	return p, held, nil
}

// registerUnlisted enters a spawned unlisted process in the unlisted set.
func (m *Manager) registerUnlisted(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starting--
	m.unlisted[p] = struct{}{}
}

// spawned settles a spawn that Start or spawnUnlisted counted as starting: a failed
// one gives back its count and its id (if it reserved one); a process spawned
// while Shutdown began is ended, since Shutdown may not have seen it.
func (m *Manager) spawned(id string, p *Process, err error) error {
	m.mu.Lock()
	if err != nil {
		m.starting--
		if id != "" {
			delete(m.procs, id)
		}
		m.mu.Unlock()
		return err
	}
	stopping := m.stopping
	m.mu.Unlock()
	if stopping {
		p.Terminate(StatusShutdown)
	}
	return nil
}

// procConfig is what the manager gives every process it spawns.
func (m *Manager) procConfig(register func(*Process), hold bool) procConfig {
	return procConfig{
		grace:      m.opts.Grace,
		drain:      m.opts.Drain,
		reaper:     m.opts.Reaper,
		sandbox:    m.opts.Sandbox,
		maxOutput:  m.opts.MaxOutputBytes,
		ringBytes:  m.opts.OutputRingBytes,
		ringChunks: m.opts.OutputRingChunks,
		register:   register,
		finished:   m.finish,
		hold:       hold,
		null:       m.null,
	}
}

// reserve takes id (or a generated one) for a Start in progress.
func (m *Manager) reserve(spec string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping {
		return "", ErrShuttingDown
	}
	id, err := m.admitLocked(spec)
	if err != nil {
		return "", err
	}
	m.procs[id] = nil
	m.starting++
	return id, nil
}

// admitLocked returns the id a process may take (spec, or a generated one
// when spec is empty) if one more may run.
func (m *Manager) admitLocked(spec string) (string, error) {
	m.trimLocked(time.Now())
	id := spec
	for taken := true; spec == "" && taken; {
		id = newID()
		_, taken = m.procs[id]
	}
	if _, ok := m.procs[id]; ok {
		return "", fmt.Errorf("%w: %s", ErrProcessExists, id)
	}
	if m.opts.MaxRunning > 0 && len(m.running)+m.starting >= m.opts.MaxRunning {
		return "", ErrTooManyProcesses
	}
	return id, nil
}

// register enters a spawned process in the table before it is supervised, so
// that it cannot finish before it is running.
func (m *Manager) register(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starting--
	m.enterLocked(p)
}

// enterLocked puts p in the table as running, under its id.
func (m *Manager) enterLocked(p *Process) {
	m.nextOrder++
	p.order = m.nextOrder
	m.procs[p.id] = p
	m.running[p] = struct{}{}
}

// finish moves an ended process from running to retained. An unlisted one
// is simply forgotten: it was never in the table.
func (m *Manager) finish(p *Process) {
	footprint := p.retainedBytes()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.unlisted[p]; ok {
		delete(m.unlisted, p)
		return
	}
	delete(m.running, p)
	p.finishedAt = time.Now()
	p.footprint = footprint
	m.finished = append(m.finished, p)
	m.retained += footprint
	m.trimLocked(p.finishedAt)
}

// trimLocked forgets the retained processes that expired or are beyond the
// bounds, oldest first, and sets the timer for the next expiry. Retained
// processes are in the order they finished, so the oldest is always first.
func (m *Manager) trimLocked(now time.Time) {
	for m.head < len(m.finished) {
		p := m.finished[m.head]
		over := len(m.finished)-m.head > m.opts.MaxRetained || m.retained > m.opts.MaxRetainedOutputBytes
		if !over && now.Before(p.finishedAt.Add(m.opts.Retention)) {
			break
		}
		delete(m.procs, p.id)
		if m.forget != nil {
			m.forget(p)
		}
		m.retained -= p.footprint
		m.finished[m.head] = nil
		m.head++
	}
	if m.head > 32 && m.head >= len(m.finished)/2 {
		n := copy(m.finished, m.finished[m.head:])
		clear(m.finished[n:])
		m.finished, m.head = m.finished[:n], 0
	}
	if m.head == len(m.finished) {
		if m.sweep != nil {
			m.sweep.Stop()
			m.sweepAt = time.Time{}
		}
		return
	}
	// One timer for the whole table, not one per process.
	due := m.finished[m.head].finishedAt.Add(m.opts.Retention)
	if due.Equal(m.sweepAt) {
		return
	}
	m.sweepAt = due
	if m.sweep == nil {
		m.sweep = time.AfterFunc(due.Sub(now), m.sweepExpired)
	} else {
		m.sweep.Reset(due.Sub(now))
	}
}

func (m *Manager) sweepExpired() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepAt = time.Time{} // fired: whatever is due next needs the timer again
	m.trimLocked(time.Now())
}

// OnForget makes the manager call f with every process it forgets from its
// table (its retention ran out, or the retained bounds dropped it): for a
// caller that keeps a record of each process beside the table, so that the
// record lives exactly as long as the process is listed. f runs with the
// manager's lock held, so it must be quick and must not call the manager.
// Unlisted processes are never in the table, so never forgotten. Set it
// before the first Start; a later call replaces f.
func (m *Manager) OnForget(f func(*Process)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget = f
}

// Get returns the running or retained process with the given id.
func (m *Manager) Get(id string) (*Process, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trimLocked(time.Now())
	p := m.procs[id]
	return p, p != nil
}

// List returns the running and retained processes in the order they started.
func (m *Manager) List() []*Process {
	m.mu.Lock()
	m.trimLocked(time.Now())
	procs := make([]*Process, 0, len(m.procs))
	for _, p := range m.procs {
		if p != nil {
			procs = append(procs, p)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(procs, func(a, b *Process) int { return cmp.Compare(a.order, b.order) })
	return procs
}

// Run starts spec and waits for it. If ctx ends first (the client went away),
// the process group is terminated and Run still returns its result. The
// process is in the table like any other.
func (m *Manager) Run(ctx context.Context, spec Spec) (*Process, error) {
	p, err := m.Start(spec)
	if err != nil {
		return nil, err
	}
	p.Wait(ctx)
	return p, nil
}

// Escaped returns how many processes the manager's Reaper found outside the
// group they were started in (Reaper.Escaped); none without a Reaper.
func (m *Manager) Escaped() int64 {
	return m.opts.Reaper.Escaped()
}

// Running returns how many processes are running.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running)
}

// Shutdown stops starting processes, terminates every running and unlisted
// group with status shutdown, and waits for them until ctx ends.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.stopping = true
	m.mu.Unlock()
	for {
		m.mu.Lock()
		procs := make([]*Process, 0, len(m.running)+len(m.unlisted))
		for p := range m.running {
			procs = append(procs, p)
		}
		for p := range m.unlisted {
			procs = append(procs, p)
		}
		starting := m.starting
		m.mu.Unlock()
		if len(procs) == 0 && starting == 0 {
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
		if len(procs) == 0 {
			// A Start is spawning: it terminates its process once spawned.
			select {
			case <-time.After(time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "p-" + hex.EncodeToString(b[:])
}
