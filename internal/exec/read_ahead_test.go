package exec

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// TestReadAheadOfOutput: a seq at or beyond the next one names output that was
// never produced; it is an error of its own, neither output lost nor a wait.
func TestReadAheadOfOutput(t *testing.T) {
	m := NewManager(Options{Reaper: testReaper, Grace: 300 * time.Millisecond, Drain: 50 * time.Millisecond})
	p, err := m.Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo one; echo two >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	next := p.Info().NextSeq
	for _, after := range []int64{next, next + 1, math.MaxInt64} {
		if _, err := p.Read(context.Background(), after, 0, time.Second); !errors.Is(err, ErrSeqAhead) {
			t.Errorf("Read(%d) with next seq %d error = %v, want ErrSeqAhead", after, next, err)
		}
	}
	if r, err := p.Read(context.Background(), next-1, 0, 0); err != nil || len(r.Chunks) != 0 || !r.Closed {
		t.Errorf("Read(%d) at the end = %+v, %v; want no chunks, closed", next-1, r, err)
	}
}
