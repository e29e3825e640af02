package sandbox

import (
	"context"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// newNetns makes a network namespace and returns a handle on it: with its
// loopback interface up when lo is set, with no interface up otherwise. The
// namespace lives as long as the handle or a process in it.
func newNetns(lo bool) (*os.File, error) {
	var f *os.File
	err := onThrowawayThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		if lo {
			if err := loopbackUp(); err != nil {
				return err
			}
		}
		var err error
		f, err = os.Open("/proc/thread-self/ns/net")
		return err
	})
	return f, err
}

// loopbackUp brings up lo in the calling thread's network namespace.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}

// netnsPool keeps fresh loopback namespaces ready. Making one costs about as
// much as spawning /bin/true (measured in docs/SANDBOX.md), so it is done
// ahead, off the request's path; each namespace serves one command only, so
// that two commands never share a loopback.
type netnsPool struct {
	once    sync.Once
	filling bool // set under once: a filler runs and closes done when it ends
	ready   chan *os.File
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
}

func newNetnsPool(size int) *netnsPool {
	ctx, cancel := context.WithCancel(context.Background())
	return &netnsPool{ready: make(chan *os.File, size), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// take returns a namespace no one else has had: a ready one, or one made now
// when none is ready. The caller closes it. The first take starts the filler,
// so that a server whose commands never ask for a loopback keeps none.
func (p *netnsPool) take() (*os.File, error) {
	p.once.Do(func() {
		p.filling = true
		go p.fill()
	})
	select {
	case f := <-p.ready:
		return f, nil
	default:
		return newNetns(true)
	}
}

// fill keeps the pool full until close. A namespace it cannot make ends the
// filling: take then makes its own and returns the error.
func (p *netnsPool) fill() {
	defer close(p.done)
	for {
		f, err := newNetns(true)
		if err != nil {
			return
		}
		select {
		case p.ready <- f:
		case <-p.ctx.Done():
			_ = f.Close()
			return
		}
	}
}

// close stops the filler and releases the namespaces that are ready.
func (p *netnsPool) close() {
	p.once.Do(func() {}) // no filler starts after this
	p.cancel()
	if p.filling {
		<-p.done
	}
	for {
		select {
		case f := <-p.ready:
			_ = f.Close()
		default:
			return
		}
	}
}
