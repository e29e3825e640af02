package exec

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
	id      string
	pid     int
	started time.Time
	grace   time.Duration
	drain   time.Duration

	stdout, stderr *headTail
	lastOutput     atomic.Int64 // unix nanoseconds of the last output byte

	stopOnce sync.Once
	stop     chan Status // a requested ending: terminated or shutdown
	done     chan struct{}
	result   Result
}

// ID returns the process's identifier.
func (p *Process) ID() string { return p.id }

// Pid returns the process id of the child, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Done is closed when the process and its group have ended and its output is complete.
func (p *Process) Done() <-chan struct{} { return p.done }

// Result returns the ending; it is complete only once Done is closed.
func (p *Process) Result() Result {
	<-p.done
	return p.result
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

// start spawns spec's program in a new process group and supervises it.
func start(id string, spec Spec, grace, drain time.Duration, maxOutput int) (*Process, error) {
	path, err := lookPath(spec)
	if err != nil {
		return nil, err
	}
	if spec.Dir != "" {
		if fi, err := os.Stat(spec.Dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s", ErrCwdNotFound, spec.Dir)
		}
	}
	if spec.MaxOutputBytes > 0 {
		maxOutput = spec.MaxOutputBytes
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpawn, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("%w: %w", ErrSpawn, err)
	}
	var stdinR, stdinW *os.File
	if len(spec.Stdin) > 0 {
		if stdinR, stdinW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return nil, fmt.Errorf("%w: %w", ErrSpawn, err)
		}
	}

	cmd := &exec.Cmd{
		Path:   path,
		Args:   spec.Argv,
		Dir:    spec.Dir,
		Env:    append([]string{}, spec.Env...), // never nil: nil would inherit the server's environment
		Stdout: outW,
		Stderr: errW,
		// Setpgid puts the child in a group of its own, so that one signal
		// reaches it and every descendant that did not leave the group.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if stdinR != nil {
		cmd.Stdin = stdinR
	}
	err = cmd.Start()
	closeAll(outW, errW, stdinR) // the child holds its own copies
	if err != nil {
		closeAll(outR, errR, stdinW)
		return nil, fmt.Errorf("%w: %w", ErrSpawn, err)
	}

	p := &Process{
		id:      id,
		pid:     cmd.Process.Pid,
		started: time.Now(),
		grace:   grace,
		drain:   drain,
		stdout:  newHeadTail(maxOutput),
		stderr:  newHeadTail(maxOutput),
		stop:    make(chan Status, 1),
		done:    make(chan struct{}),
	}
	p.lastOutput.Store(p.started.UnixNano())
	if stdinW != nil {
		go func() {
			// A child that exits without reading gives EPIPE: not our failure.
			_, _ = stdinW.Write(spec.Stdin)
			_ = stdinW.Close()
		}()
	}
	go p.supervise(cmd, spec, outR, errR)
	return p, nil
}

// supervise waits for the child, enforces the limits and requested endings,
// cleans up the whole group, and records the result.
func (p *Process) supervise(cmd *exec.Cmd, spec Spec, outR, errR *os.File) {
	var readers sync.WaitGroup
	readers.Add(2)
	go p.read(&readers, outR, p.stdout)
	go p.read(&readers, errR, p.stderr)
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()

	exited := make(chan *os.ProcessState, 1)
	go func() {
		// With *os.File stdio, Wait returns as soon as the child exits: it does
		// not wait for descendants that still hold the pipes.
		_ = cmd.Wait()
		exited <- cmd.ProcessState
	}()

	var timeout, idle <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var idleTimer *time.Timer
	if spec.IdleTimeout > 0 {
		idleTimer = time.NewTimer(spec.IdleTimeout)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}

	var (
		ending Status // set when we end the group ourselves
		k      = killer{pgid: p.pid, grace: p.grace}
		state  *os.ProcessState
	)
	for state == nil {
		select {
		case state = <-exited:
		case <-timeout:
			ending = k.terminate(ending, StatusTimedOut)
		case <-idle:
			quiet := time.Since(time.Unix(0, p.lastOutput.Load()))
			if quiet >= spec.IdleTimeout {
				ending = k.terminate(ending, StatusIdleTimeout)
			} else {
				idleTimer.Reset(spec.IdleTimeout - quiet)
			}
		case why := <-p.stop:
			ending = k.terminate(ending, why)
		case <-k.next:
			k.escalate()
		}
	}
	ended := time.Now()

	// The leader has exited. Descendants may still run and hold the pipes: give
	// them a short drain (or the rest of the grace, when we are already ending
	// the group), then end whatever is left of the group, so that no request
	// ever leaves a process behind.
	k.reap(readersDone, p.drain)
	closeAll(outR, errR) // unblocks readers if a process outside the group holds the pipes
	<-readersDone

	p.result = Result{
		Status:   ending,
		Duration: ended.Sub(p.started),
		Stdout:   p.stdout.Output(),
		Stderr:   p.stderr.Output(),
	}
	ws, _ := state.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		p.result.Signal = unix.SignalName(ws.Signal())
		if p.result.Status == "" {
			p.result.Status = StatusSignaled
		}
	default:
		code := ws.ExitStatus()
		p.result.ExitCode = &code
		if p.result.Status == "" {
			p.result.Status = StatusExited
		}
	}
	close(p.done)
}

// read copies one stream into its collector until EOF.
func (p *Process) read(wg *sync.WaitGroup, r io.Reader, sink *headTail) {
	defer wg.Done()
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.lastOutput.Store(time.Now().UnixNano())
			sink.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}
