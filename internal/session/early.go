package session

import "github.com/snapexec/snapexec/internal/shellsnap"

// A command's end state is read while its shell exits
// (shellsnap.DumpWatch): the dump is complete about a millisecond before
// the shell is reaped, which is as long as reading it and naming its
// changes take. End takes what was read when nothing wrote in the
// command's directory since (DumpWatch.Quiet), and reads it again
// otherwise, so that the outcome is the one reading after the exit gives.

// early is a command's end state, read as soon as its dump was complete.
type early struct {
	watch *shellsnap.DumpWatch
	ended chan struct{} // closed by End: stop waiting for the dump
	done  chan struct{} // closed once the reading below is over, or never began

	read    bool // the dump was read: next, err and changes are set
	next    *shellsnap.SessionState
	err     error
	changes shellsnap.SessionChanges
}

// watchEnd starts reading l's command's end state as soon as its dump is
// complete, when its dump can be watched. A watch of a command l no longer
// runs (a standby discarded for a fresh start) ends.
func (l *Lease) watchEnd() {
	l.stopEarly()
	w := l.cmd.WatchDump()
	if w == nil {
		return
	}
	e := &early{watch: w, ended: make(chan struct{}), done: make(chan struct{})}
	l.early = e
	cmd, prev, maxBytes := l.cmd, l.state, l.t.opts.MaxStateBytes
	go func() {
		defer close(e.done)
		select {
		case <-w.Dumped():
		case <-e.ended:
			select {
			case <-w.Dumped(): // both: the dump came first
			default:
				return
			}
		}
		e.next, e.err = cmd.Finish(maxBytes)
		if e.err == nil {
			e.changes = e.next.Changes(prev)
		}
		e.read = true
	}()
}

// finish returns the end state of l's command, which exited, as Finish
// reads it now, and its changes.
func (l *Lease) finish() (*shellsnap.SessionState, shellsnap.SessionChanges, error) {
	if e := l.early; e != nil {
		close(e.ended)
		<-e.done
		if e.read && e.watch.Quiet() {
			return e.next, e.changes, e.err
		}
	}
	next, err := l.cmd.Finish(l.t.opts.MaxStateBytes)
	if err != nil {
		return nil, shellsnap.SessionChanges{}, err
	}
	return next, next.Changes(l.state), nil
}

// stopEarly ends the watch of l's command's dump.
func (l *Lease) stopEarly() {
	if e := l.early; e != nil {
		select {
		case <-e.ended:
		default:
			close(e.ended)
		}
		e.watch.Close()
		l.early = nil
	}
}
