package shellsnap

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// acquireAsync starts an acquire of scope and returns where its release comes.
func acquireAsync(ctx context.Context, s *slots, scope string) <-chan func() {
	got := make(chan func(), 1)
	go func() {
		release, err := s.acquire(ctx, scope)
		if err == nil {
			got <- release
		}
	}()
	return got
}

func granted(got <-chan func()) (func(), bool) {
	select {
	case release := <-got:
		return release, true
	default:
		return nil, false
	}
}

func TestSlotsShareAndOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()   // the waiters a failed check leaves behind
		s := newSlots(4) // a scope's share: 2
		// acquire asks in order: each waits (or not) before the next asks.
		acquire := func(scope string) <-chan func() {
			got := acquireAsync(ctx, s, scope)
			synctest.Wait()
			return got
		}
		a1, a2, a3 := acquire("a"), acquire("a"), acquire("a")
		relA1, ok1 := granted(a1)
		_, ok2 := granted(a2)
		if !ok1 || !ok2 {
			t.Fatalf("scope a's first two acquires waited with 4 slots free")
		}
		if _, ok := granted(a3); ok {
			t.Fatalf("scope a got a third slot of 4: more than its share")
		}
		b1, b2 := acquire("b"), acquire("b")
		_, okB1 := granted(b1)
		relB2, okB2 := granted(b2)
		if !okB1 || !okB2 {
			t.Fatalf("scope b waited for slots while scope a held only its share")
		}
		b3, c1 := acquire("b"), acquire("c")

		// One of a's frees: a3 (a holds 1) and c1 (c holds none) may take
		// it; the scope holding fewer goes first, although a3 came first.
		relA1()
		synctest.Wait()
		relC1, okC := granted(c1)
		if _, ok := granted(a3); ok || !okC {
			t.Fatalf("after a's release, c1 granted = %v; want c1, whose scope holds fewer, before a3", okC)
		}
		// One of b's frees: a3 and b3 hold as many (1 each); the one waiting
		// longer goes first.
		relB2()
		synctest.Wait()
		relA3, okA3 := granted(a3)
		if _, ok := granted(b3); ok || !okA3 {
			t.Fatalf("after b's release, a3 granted = %v; want a3 (waiting longest) before b3", okA3)
		}
		relC1()
		relA3()
		synctest.Wait()
		if _, ok := granted(b3); !ok {
			t.Fatalf("b3 still waits with slots free")
		}
	})
}

func TestSlotsWaiterThatLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlots(1)
		release, err := s.acquire(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		gone := errors.New("gone")
		left := make(chan error, 1)
		go func() {
			_, err := s.acquire(ctx, "b")
			left <- err
		}()
		synctest.Wait()
		cancel(gone)
		if err := <-left; !errors.Is(err, gone) {
			t.Errorf("acquire after its ctx ended = %v, want the cause", err)
		}
		release()
		// The slot is free again, the waiter that left holds nothing.
		next := acquireAsync(context.Background(), s, "c")
		synctest.Wait()
		if _, ok := granted(next); !ok {
			t.Errorf("the slot is not free after its holder released it and the only waiter left")
		}
	})
}

func TestSlotsUnbounded(t *testing.T) {
	s := newSlots(0)
	for range 100 {
		if _, err := s.acquire(context.Background(), "a"); err != nil {
			t.Fatalf("unbounded acquire = %v", err)
		}
	}
}
