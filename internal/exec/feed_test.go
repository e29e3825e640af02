package exec

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// feedOf returns a process that has only a ring, as a feed sees it.
func feedOf(maxBytes, maxChunks int) *Process {
	return &Process{ring: newRing(maxBytes, maxChunks)}
}

// drain takes everything f has now, without waiting.
func drain(t *testing.T, f *Feed) []Chunk {
	t.Helper()
	var out []Chunk
	for {
		r, err := f.Next(context.Background(), 0)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if len(r.Chunks) == 0 {
			return out
		}
		out = append(out, r.Chunks...)
	}
}

// TestFeedDeliversEveryChunkOnce: whether the reader keeps up or falls far
// behind (the feed then reads the ring again), it gets every chunk the ring
// holds exactly once and in seq order, the same chunks a read of the ring
// returns.
func TestFeedDeliversEveryChunkOnce(t *testing.T) {
	p := feedOf(1<<24, 1<<20)
	p.ring.append(Pty, []byte("before"))
	f, err := p.Follow(0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []Chunk
	for round, n := range []int{1, 3, feedBytes / 100, 1, 2 * feedBytes / (1000 + chunkOverhead), 5} {
		for i := range n {
			size := 1 + (round*7+i)%1000
			p.ring.append(Pty, bytes.Repeat([]byte{byte('a' + round)}, size))
		}
		got = append(got, drain(t, f)...)
	}
	want := p.ring.read(0, 0).chunks
	if !slices.EqualFunc(got, want, func(a, b Chunk) bool { return a.Seq == b.Seq && bytes.Equal(a.Data, b.Data) }) {
		t.Errorf("the feed gave seqs %v, want the ring's %v", seqs(got), seqs(want))
	}
}

// TestFeedLost: a reader that fell behind by more than the ring holds is
// told ErrOutputLost with the oldest retained seq, then goes on from there;
// the feed holds no more than feedBytes for it meanwhile.
func TestFeedLost(t *testing.T) {
	p := feedOf(3*feedBytes/2, 1<<20)
	f, err := p.Follow(0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	big := bytes.Repeat([]byte("x"), feedBytes/2)
	for range 5 {
		p.ring.append(Pty, big)
		if f.bytes > feedBytes {
			t.Fatalf("the feed holds %d bytes, want at most %d", f.bytes, feedBytes)
		}
	}
	oldest := p.ring.read(0, 0).chunks[0].Seq
	r, err := f.Next(context.Background(), 0)
	if !errors.Is(err, ErrOutputLost) || r.NextSeq != oldest {
		t.Fatalf("Next after the ring evicted unread chunks = next %d, %v; want ErrOutputLost, next %d", r.NextSeq, err, oldest)
	}
	var want []int64
	for s := oldest; s <= 5; s++ {
		want = append(want, s)
	}
	if got := seqs(drain(t, f)); !slices.Equal(got, want) {
		t.Errorf("after the loss the feed gave %v, want the retained chunks from %d to 5", got, oldest)
	}
}

// TestFollowFrom: where a feed starts, and what it refuses.
func TestFollowFrom(t *testing.T) {
	p := feedOf(10, 100)
	for _, s := range []string{"aaaa", "bbbb", "cccc", "dddd"} { // 10 bytes: seq 1 and 2 are evicted
		p.ring.append(Pty, []byte(s))
	}
	tests := []struct {
		after   int64
		want    []int64
		wantErr error
	}{
		{0, []int64{3, 4}, nil}, // the oldest retained
		{3, []int64{4}, nil},
		{4, nil, nil},           // the current end
		{1, nil, ErrOutputLost}, // 2 was evicted
		{5, nil, ErrSeqAhead},
	}
	for _, tt := range tests {
		f, err := p.Follow(tt.after)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Follow(%d) = %v, want %v", tt.after, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got := seqs(drain(t, f)); !slices.Equal(got, append([]int64{}, tt.want...)) {
			t.Errorf("Follow(%d) gave %v, want %v", tt.after, got, tt.want)
		}
		f.Close()
	}
	if len(p.ring.feeds) != 0 {
		t.Errorf("%d feeds left on the ring after Close, want 0", len(p.ring.feeds))
	}
}

// TestFeedWaitsAndEnds: Next waits for the next chunk, and reports Closed
// once the output is complete and all of it taken.
func TestFeedWaitsAndEnds(t *testing.T) {
	p := feedOf(1<<20, 100)
	f, err := p.Follow(0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make(chan ReadResult, 1)
	go func() {
		r, _ := f.Next(context.Background(), time.Minute)
		got <- r
	}()
	p.ring.append(Pty, []byte("hi"))
	if r := <-got; len(r.Chunks) != 1 || string(r.Chunks[0].Data) != "hi" || r.Closed {
		t.Errorf("a waiting Next = %+v, want the chunk \"hi\"", r)
	}
	p.ring.append(Pty, []byte("bye"))
	p.ring.close()
	r, err := f.Next(context.Background(), time.Minute)
	if err != nil || len(r.Chunks) != 1 || !r.Closed {
		t.Errorf("Next after the end = %+v, %v; want the last chunk and Closed", r, err)
	}
	if r, err := f.Next(context.Background(), time.Minute); err != nil || len(r.Chunks) != 0 || !r.Closed {
		t.Errorf("Next once all is taken = %+v, %v; want Closed at once", r, err)
	}
}
