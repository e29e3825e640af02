package shellsnap

import (
	"context"
	"sync"
)

// slots bounds the captures running at once, with a fair share per scope.
//
// A hung capture cannot be preempted: it holds its slot until its own limit
// ends it. So fairness cannot wait until another scope shows up; it holds
// from the start: a scope holds at most ceil(max/2) slots, and the others
// stay free for other scopes whatever one workspace's profile does. When a
// slot frees, it goes to the waiting capture whose scope holds the fewest,
// the longest waiting first among those. With max 1 the one slot is shared
// in turn; with two scopes hung at their share, a third one's commands fall
// back after Options.SlotWait rather than wait for a slot.
type slots struct {
	max, perScope int // max <= 0: unbounded

	mu      sync.Mutex
	total   int
	held    map[string]int // by scope; absent when zero
	waiting []*slotWaiter  // in arrival order
}

type slotWaiter struct {
	scope   string
	granted chan struct{} // closed when the slot is this waiter's
}

func newSlots(max int) *slots {
	return &slots{max: max, perScope: (max + 1) / 2, held: map[string]int{}}
}

// acquire takes a slot for scope, waiting until one is free and the scope is
// under its share, or until ctx ends. release gives the slot back.
func (s *slots) acquire(ctx context.Context, scope string) (release func(), err error) {
	if s.max <= 0 {
		return func() {}, nil
	}
	release = sync.OnceFunc(func() { s.release(scope) })
	s.mu.Lock()
	if s.freeLocked(scope) {
		s.takeLocked(scope)
		s.mu.Unlock()
		return release, nil
	}
	w := &slotWaiter{scope: scope, granted: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.granted:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for i, o := range s.waiting {
		if o == w {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	select {
	case <-w.granted:
		release() // granted as ctx ended: hand it on
	default:
	}
	return nil, context.Cause(ctx)
}

func (s *slots) freeLocked(scope string) bool {
	return s.total < s.max && s.held[scope] < s.perScope
}

func (s *slots) takeLocked(scope string) {
	s.total++
	s.held[scope]++
}

// release frees scope's slot and grants what is free to the waiters.
func (s *slots) release(scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.held[scope]--; s.held[scope] == 0 {
		delete(s.held, scope)
	}
	for {
		best := -1
		for i, w := range s.waiting {
			if s.freeLocked(w.scope) && (best < 0 || s.held[w.scope] < s.held[s.waiting[best].scope]) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := s.waiting[best]
		s.waiting = append(s.waiting[:best], s.waiting[best+1:]...)
		s.takeLocked(w.scope)
		close(w.granted)
	}
}
