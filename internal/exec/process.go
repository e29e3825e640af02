package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// Stream names one of a process's output streams.
type Stream string

// The output streams.
const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Process is a running or finished child and its process group.
type Process struct {
	id        string
	pid       int
	argv      []string
	dir       string
	pipeStdin bool
	grace     time.Duration
	drain     time.Duration
	reaper    *Reaper
	maxOutput int
	sandbox   sandbox.Report

	ring           *ring
	out            Stream       // the stream of its stdout: Stdout, or Pty on a terminal
	stdout, stderr *headTail    // for the result; nil once it is recorded
	lastOutput     atomic.Int64 // unix nanoseconds of the last output byte
	stdin          *stdinPipe   // nil without PipeStdin or a terminal
	tty            *terminal    // nil without one
	leadsSession   bool         // on a terminal or with Spec.NewSession: its kill reaches the session

	// armed is closed when the limits below are set and the process counts
	// as started: at once, or when a held process is released (held.go).
	armed       chan struct{}
	timeout     time.Duration
	idleTimeout time.Duration

	stopOnce sync.Once
	stop     chan Status // a requested ending: terminated or shutdown
	finished func(*Process)
	done     chan struct{}

	mu       sync.Mutex
	started  time.Time // when it was spawned, or released
	exited   bool      // the leader has exited
	exitCode *int      // the leader's exit code; nil while running or when signaled
	ended    time.Time // when the leader exited
	status   Status    // the final status; empty while running
	signal   string
	gone     bool // the group has ended: no signal may be sent to its id again
	ttySize  TTYSize

	result   Result  // complete once done is closed
	fromRing [2]bool // the stream's result output is derived from the ring, which holds all of it

	// The manager's bookkeeping, under Manager.mu.
	order      uint64    // start order
	finishedAt time.Time // when it joined the retained processes
	footprint  int64     // retained bytes counted against MaxRetainedOutputBytes
}

// ID returns the process's identifier.
func (p *Process) ID() string { return p.id }

// Pid returns the process id of the child, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Done is closed when the process and its group have ended and its output is complete.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to end. If ctx ends first (its client went
// away), the process group is terminated and Wait still waits for the end.
func (p *Process) Wait(ctx context.Context) {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Terminate(StatusTerminated)
		<-p.done
	}
}

// Result returns the ending; it waits until Done is closed. Its output must
// not be modified.
func (p *Process) Result() Result {
	<-p.done
	r := p.result
	if p.fromRing[0] {
		r.Stdout = p.ring.headTail(p.out, p.maxOutput)
	}
	if p.fromRing[1] {
		r.Stderr = p.ring.headTail(Stderr, p.maxOutput)
	}
	return r
}

// Terminate asks for the process group to be ended (SIGTERM, then SIGKILL after
// the grace period) and records why. It reports whether the process was still
// running. It does not wait.
func (p *Process) Terminate(why Status) bool {
	select {
	case <-p.done:
		return false
	default:
	}
	p.stopOnce.Do(func() { p.stop <- why })
	return true
}

// Signal sends sig to the whole process group, or for a process on a
// terminal to the terminal's foreground group, and reports whether the group
// was still there to receive it. Unlike Terminate it records no ending of its
// own: a child that dies of the signal ends signaled, one that handles it ends
// as it chooses.
func (p *Process) Signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Under mu, so that the group id is never signaled once the group has
	// ended and the id may belong to someone else.
	if p.gone || p.pid <= 0 {
		return false
	}
	return syscall.Kill(-p.signalTarget(), sig) == nil
}

// Info is a snapshot of a process, without its output.
type Info struct {
	ID   string
	Pid  int
	Argv []string
	Dir  string
	// Status is StatusRunning until the process and its group have ended.
	Status Status
	// ExitCode is nil while running and when the process was ended by a signal.
	ExitCode *int
	// Signal names the ending signal, or is empty.
	Signal    string
	StartedAt time.Time
	// EndedAt is when the process exited; zero while Status is running.
	EndedAt time.Time
	// Duration is the run time so far, or from start to exit.
	Duration    time.Duration
	StdoutBytes int64
	StderrBytes int64
	// NextSeq is the seq the next output chunk will get.
	NextSeq   int64
	PipeStdin bool
	// StdinOpen reports whether WriteStdin may still write.
	StdinOpen bool
	// Sandbox is how the process was confined.
	Sandbox sandbox.Report
	// TTY is the size of the process's terminal; nil without one, and its
	// last size once the process has ended.
	TTY *TTYSize
}

// Info returns a consistent snapshot of the process. It copies no output.
func (p *Process) Info() Info {
	in := Info{
		ID:        p.id,
		Pid:       p.pid,
		Argv:      append([]string(nil), p.argv...),
		Dir:       p.dir,
		PipeStdin: p.pipeStdin,
		Sandbox:   p.sandbox,
	}
	p.mu.Lock()
	in.StartedAt = p.started
	in.Status, in.Signal = p.status, p.signal
	if p.status == "" {
		in.Status = StatusRunning
		in.Duration = time.Since(p.started)
	} else {
		in.EndedAt = p.ended
		in.Duration = p.ended.Sub(p.started)
		if p.exitCode != nil {
			code := *p.exitCode
			in.ExitCode = &code
		}
	}
	p.mu.Unlock()
	// The output is complete before the status is final, so a final status
	// comes with final counts.
	st := p.ring.stats()
	in.StdoutBytes, in.StderrBytes, in.NextSeq = st.total[0], st.total[1], st.nextSeq
	in.StdinOpen = p.stdin != nil && p.stdin.file() != nil
	if p.tty != nil {
		p.mu.Lock()
		size := p.ttySize
		p.mu.Unlock()
		in.TTY = &size
	}
	return in
}

// procConfig is what a process takes from its manager.
type procConfig struct {
	grace, drain time.Duration
	reaper       *Reaper
	sandbox      *sandbox.Sandbox
	maxOutput    int
	ringBytes    int
	ringChunks   int
	register     func(*Process) // called once spawned, before it is supervised
	finished     func(*Process) // called once the process has ended, before Done is closed
	// hold gives the child the read end of a pipe as fd 3 and the write end
	// of another as fd 4 (their other ends returned by start), and leaves its
	// limits unarmed until arm.
	hold bool
	// null is the stdin and the discarded stderr of a child without a pipe
	// there.
	null nullDevice
}

// heldEnds are the server's ends of a held child's pipes: release writes to
// the child's fd 3 (its go-ahead), and ready reads from its fd 4, which the
// child closes once it waits for the go-ahead.
type heldEnds struct{ release, ready *os.File }

// start spawns spec's program in a new process group and supervises it. With
// cfg.hold it also returns the server's ends of the held child's pipes.
func start(id string, spec Spec, cfg procConfig) (*Process, heldEnds, error) {
	path, err := lookPath(spec)
	if err != nil {
		return nil, heldEnds{}, err
	}
	if err := CheckDir(spec.Dir); err != nil {
		return nil, heldEnds{}, err
	}
	// Checked before any pipe is made: a refusal leaves nothing to undo.
	if err := checkSandbox(cfg.sandbox, spec.Sandbox); err != nil {
		return nil, heldEnds{}, err
	}
	maxOutput := cfg.maxOutput
	switch {
	case spec.MaxOutputBytes > 0:
		maxOutput = spec.MaxOutputBytes
	case spec.MaxOutputBytes < 0:
		maxOutput = 0
	}
	var (
		outR, outW     *os.File
		errR, errW     *os.File // nil: /dev/null, or the terminal
		stdinR, stdinW *os.File
		tty            *terminal
	)
	var pts *sandbox.Devpts
	if spec.TTY != nil {
		// A command with a devpts of its own has its terminal opened there,
		// where it finds it by name (sandbox/devpts.go).
		if pts, err = cfg.sandbox.Devpts(spec.Sandbox); err != nil {
			return nil, heldEnds{}, fmt.Errorf("%w: %w", ErrSpawn, err)
		}
		defer pts.Close()
		var slave *os.File
		if tty, slave, err = openTerminal(*spec.TTY, pts); err != nil {
			return nil, heldEnds{}, fmt.Errorf("%w: %w", ErrSpawn, err)
		}
		if stdinW, err = tty.writer(); err != nil {
			closeAll(tty.master, slave)
			return nil, heldEnds{}, fmt.Errorf("%w: %w", ErrSpawn, err)
		}
		outR, outW = tty.master, slave
	} else {
		if outR, outW, err = childPipe(false); err != nil {
			return nil, heldEnds{}, fmt.Errorf("%w: %w", ErrSpawn, err)
		}
		if !spec.DiscardStderr {
			if errR, errW, err = childPipe(false); err != nil {
				closeAll(outR, outW)
				return nil, heldEnds{}, fmt.Errorf("%w: %w", ErrSpawn, err)
			}
		}
		if len(spec.Stdin) > 0 || spec.PipeStdin {
			if stdinR, stdinW, err = childPipe(true); err != nil {
				closeAll(outR, outW, errR, errW)
				return nil, heldEnds{}, fmt.Errorf("%w: %w", ErrSpawn, err)
			}
		}
	}
	var releaseR, readyW *os.File
	var held heldEnds
	if cfg.hold {
		releaseR, held.release, err = childPipe(true)
		if err == nil {
			held.ready, readyW, err = childPipe(false)
		}
		if err != nil {
			closeAll(outR, outW, errR, errW, stdinR, stdinW, releaseR, held.release)
			return nil, heldEnds{}, fmt.Errorf("%w: %w", ErrSpawn, err)
		}
	}

	args := spec.Argv
	if spec.Arg0 != "" {
		args = append([]string{spec.Arg0}, spec.Argv[1:]...)
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   args,
		Dir:    spec.Dir,
		Env:    append([]string{}, spec.Env...), // never nil: nil would inherit the server's environment
		Stdout: outW,
		// Setpgid puts the child in a group of its own, so that one signal
		// reaches it and every descendant that did not leave the group.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if spec.NewSession {
		// A new session leads a new group too, whose id is the child's pid.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if cfg.null.r != nil { // else os/exec opens /dev/null itself
		cmd.Stdin, cmd.Stderr = cfg.null.r, cfg.null.w
	}
	if stdinR != nil {
		cmd.Stdin = stdinR
	}
	if errW != nil {
		cmd.Stderr = errW
	}
	if tty != nil {
		// A new session leads a new group too (its id is the child's pid, as
		// with Setpgid), and the terminal becomes its controlling terminal
		// with the child's group in the foreground.
		cmd.Stdin, cmd.Stderr = outW, outW
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	if releaseR != nil {
		cmd.ExtraFiles = []*os.File{releaseR, readyW}
	}
	report, err := cfg.reaper.start(cmd, cfg.sandbox, spec.Sandbox, pts)
	closeAll(outW, errW, stdinR, releaseR, readyW) // the child holds its own copies
	if err != nil {
		closeAll(outR, errR, stdinW, held.release, held.ready)
		return nil, heldEnds{}, spawnError(err)
	}

	p := &Process{
		id:           id,
		pid:          cmd.Process.Pid,
		argv:         append([]string(nil), spec.Argv...),
		dir:          spec.Dir,
		pipeStdin:    spec.PipeStdin || tty != nil,
		started:      time.Now(),
		grace:        cfg.grace,
		drain:        cfg.drain,
		reaper:       cfg.reaper,
		maxOutput:    maxOutput,
		sandbox:      report,
		ring:         newRing(cfg.ringBytes, cfg.ringChunks),
		out:          Stdout,
		tty:          tty,
		leadsSession: tty != nil || spec.NewSession,
		stdout:       newHeadTail(maxOutput),
		stderr:       newHeadTail(maxOutput),
		stop:         make(chan Status, 1),
		finished:     cfg.finished,
		done:         make(chan struct{}),
		armed:        make(chan struct{}),
	}
	if tty != nil {
		p.out, p.ttySize = Pty, *spec.TTY
	}
	p.lastOutput.Store(p.started.UnixNano())
	if !cfg.hold {
		p.arm(spec)
	}
	switch {
	case spec.PipeStdin, tty != nil:
		p.stdin = newStdinPipe(stdinW, tty == nil)
		if len(spec.Stdin) > 0 {
			p.stdin.turn <- struct{}{} // taken before any WriteStdin can be called
			go p.stdin.writeInitial(spec.Stdin)
		}
	case stdinW != nil:
		go func() {
			// A child that exits without reading gives EPIPE: not our failure.
			_, _ = stdinW.Write(spec.Stdin)
			_ = stdinW.Close()
		}()
	}
	if cfg.register != nil {
		cfg.register(p)
	}
	go p.supervise(cmd, outR, errR)
	return p, held, nil
}

// CheckDir returns ErrCwdNotFound unless dir is empty (the server's working
// directory) or an existing directory. It is the one check of a working
// directory: every spawn makes it, and a caller that must refuse a directory
// before it spawns anything (a prewarm) makes the same.
func CheckDir(dir string) error {
	if dir == "" {
		return nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: %s", ErrCwdNotFound, dir)
	}
	return nil
}

// arm sets the limits of spec and counts the process as started now. It is
// called once, before anyone can see the process: by start, or by a release.
func (p *Process) arm(spec Spec) {
	now := time.Now()
	p.mu.Lock()
	p.started = now
	p.mu.Unlock()
	p.lastOutput.Store(now.UnixNano())
	p.timeout, p.idleTimeout = spec.Timeout, spec.IdleTimeout
	close(p.armed)
}

// supervise waits for the child, enforces the limits and requested endings,
// cleans up the whole group, and records the result.
func (p *Process) supervise(cmd *exec.Cmd, outR, errR *os.File) {
	var readers sync.WaitGroup
	readers.Go(func() { p.read(outR, p.out, p.stdout) })
	if errR != nil {
		readers.Go(func() { p.read(errR, Stderr, p.stderr) })
	}
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()

	exited := make(chan *os.ProcessState, 1)
	go func() {
		// With *os.File stdio, Wait returns as soon as the child exits: it does
		// not wait for descendants that still hold the pipes.
		_ = cmd.Wait()
		exited <- cmd.ProcessState
	}()

	var (
		timeout, idle <-chan time.Time
		idleTimer     *time.Timer
		armed         = p.armed
	)
	var (
		ending Status // set when we end the group ourselves
		k      = killer{pgid: p.pid, grace: p.grace, reaper: p.reaper, tty: p.tty, session: p.leadsSession}
		state  *os.ProcessState
	)
	for state == nil {
		select {
		case state = <-exited:
		case <-armed:
			armed = nil
			if p.timeout > 0 {
				t := time.NewTimer(p.timeout)
				defer t.Stop()
				timeout = t.C
			}
			if p.idleTimeout > 0 {
				idleTimer = time.NewTimer(p.idleTimeout)
				defer idleTimer.Stop()
				idle = idleTimer.C
			}
		case <-timeout:
			ending = k.terminate(ending, StatusTimedOut)
		case <-idle:
			quiet := time.Since(time.Unix(0, p.lastOutput.Load()))
			if quiet >= p.idleTimeout {
				ending = k.terminate(ending, StatusIdleTimeout)
			} else {
				idleTimer.Reset(p.idleTimeout - quiet)
			}
		case why := <-p.stop:
			ending = k.terminate(ending, why)
		case <-k.next:
			k.escalate()
		}
	}
	ended := time.Now()
	var (
		signal   string
		exitCode *int
	)
	ws, _ := state.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		signal = unix.SignalName(ws.Signal())
		if ending == "" {
			ending = StatusSignaled
		}
	} else {
		code := ws.ExitStatus()
		exitCode = &code
		if ending == "" {
			ending = StatusExited
		}
	}
	p.mu.Lock()
	p.exited, p.exitCode, p.ended = true, exitCode, ended
	p.mu.Unlock()

	// The leader has exited. Descendants may still run and hold the pipes: give
	// them a short drain (or the rest of the grace, when we are already ending
	// the group), then end whatever is left of the group, so that no request
	// ever leaves a process behind.
	k.reap(readersDone, func() bool {
		return pipeWritersGone(outR) && (errR == nil || pipeWritersGone(errR))
	}, p.drain)
	p.reaper.ended(p.pid)
	closeAll(outR, errR) // unblocks readers if a process outside the group holds the pipes
	<-readersDone

	// The output is complete. A stream the ring holds whole needs no second
	// copy for the result: it is derived from the ring when asked for.
	p.mu.Lock()
	res := Result{Status: ending, Duration: ended.Sub(p.started), Signal: signal, ExitCode: exitCode}
	p.mu.Unlock()
	var fromRing [2]bool
	if fromRing[0] = p.ring.complete(p.out); !fromRing[0] {
		res.Stdout = p.stdout.Output()
	}
	if fromRing[1] = p.ring.complete(Stderr); !fromRing[1] {
		res.Stderr = p.stderr.Output()
	}
	p.stdout, p.stderr = nil, nil
	if p.stdin != nil {
		p.stdin.close()
	}

	p.mu.Lock()
	p.gone = true
	p.status, p.signal = ending, signal
	p.result, p.fromRing = res, fromRing
	p.mu.Unlock()
	p.ring.close()
	if p.finished != nil {
		p.finished(p)
	}
	close(p.done)
}

// read copies one stream into the ring and its collector until EOF.
func (p *Process) read(r io.Reader, s Stream, sink *headTail) {
	// No read may be larger than the ring, which then holds at least the last.
	limit := min(maxReadBytes, p.ring.maxBytes)
	// Most commands write little: the buffer starts small and grows to
	// limit once a read fills it, so that a short command does not
	// allocate two large buffers it never fills.
	buf := make([]byte, min(firstReadBytes, limit))
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.lastOutput.Store(time.Now().UnixNano())
			p.ring.append(s, buf[:n])
			sink.Write(buf[:n])
		}
		if err != nil {
			return
		}
		if n == len(buf) && len(buf) < limit {
			buf = make([]byte, limit)
		}
	}
}

// firstReadBytes and maxReadBytes are the first and the largest read of an
// output stream.
const (
	firstReadBytes = 2 << 10
	maxReadBytes   = 32 << 10
)

// retainedBytes is what the ended process holds: its ring, the result's
// output beside the ring, and the remembered write ids.
func (p *Process) retainedBytes() int64 {
	n := p.ring.stats().footprint
	if p.stdin != nil {
		n += p.stdin.footprint()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return n + int64(len(p.result.Stdout.Data)+len(p.result.Stderr.Data))
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// nullDevice is /dev/null opened for reading and for writing, shared by the
// children of a Manager (each gets its own descriptor of it).
type nullDevice struct {
	r, w *os.File
}

// openNull opens /dev/null; its zero value when that fails, so that each
// spawn tries again and fails as it would have.
func openNull() nullDevice {
	r, err := os.Open(os.DevNull)
	if err != nil {
		return nullDevice{}
	}
	w, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		_ = r.Close()
		return nullDevice{}
	}
	return nullDevice{r: r, w: w}
}

// childPipe returns a pipe between this process and a child: the child reads
// from r when childReads, else writes to w. Only this process's end is
// non-blocking and in the runtime's poller. os.Pipe would put both there, and
// the child's end would cost system calls for nothing: two to make it
// non-blocking, one to register it, two to make it blocking again for the
// child, who needs it so, and one to unregister it when it is closed
// (measured: 10 fewer a command with its two output pipes).
func childPipe(childReads bool) (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	ours := p[0]
	if childReads {
		ours = p[1]
	}
	// A new pipe end has no other status flag to keep.
	if _, err := unix.FcntlInt(uintptr(ours), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		_, _ = unix.Close(p[0]), unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// NewFile puts a non-blocking descriptor in the poller, and leaves a
	// blocking one out of it.
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
