package exec

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// fillRing returns a ring holding one chunk per size, alternating streams.
func fillRing(maxBytes, maxChunks int, sizes ...int) *ring {
	r := newRing(maxBytes, maxChunks)
	for i, n := range sizes {
		s := Stdout
		if i%2 == 1 {
			s = Stderr
		}
		r.append(s, bytes.Repeat([]byte{byte('a' + i)}, n))
	}
	return r
}

func seqs(chunks []Chunk) []int64 {
	out := []int64{}
	for _, c := range chunks {
		out = append(out, c.Seq)
	}
	return out
}

func TestRingReadMaxBytes(t *testing.T) {
	r := fillRing(1<<20, 100, 3, 5, 2, 10) // seqs 1..4
	tests := []struct {
		name     string
		after    int64
		maxBytes int
		want     []int64
		wantNext int64
	}{
		{"everything", 0, 0, []int64{1, 2, 3, 4}, 5},
		{"negative after is the start", -7, 0, []int64{1, 2, 3, 4}, 5},
		{"resume", 2, 0, []int64{3, 4}, 5},
		{"at the end", 4, 0, []int64{}, 5},
		{"past the end", 9, 0, []int64{}, 5},
		{"first chunk beyond the budget still comes", 0, 1, []int64{1}, 2},
		{"budget reached exactly", 0, 8, []int64{1, 2}, 3},
		{"stop before the chunk that would exceed", 0, 9, []int64{1, 2}, 3},
		{"three fit", 0, 10, []int64{1, 2, 3}, 4},
		{"large budget", 0, 100, []int64{1, 2, 3, 4}, 5},
		{"resume within budget", 2, 2, []int64{3}, 4},
		{"resume with the last chunk too big", 3, 1, []int64{4}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.read(tt.after, tt.maxBytes)
			if got.lost || !slices.Equal(seqs(got.chunks), tt.want) || got.next != tt.wantNext {
				t.Errorf("read(%d, %d) = seqs %v next %d lost %v, want %v next %d", tt.after, tt.maxBytes, seqs(got.chunks), got.next, got.lost, tt.want, tt.wantNext)
			}
		})
	}
}

func TestRingEviction(t *testing.T) {
	tests := []struct {
		name      string
		maxBytes  int
		maxChunks int
		sizes     []int
		after     int64
		want      []int64
		wantLost  bool
		wantNext  int64
	}{
		{"nothing evicted", 100, 100, []int{4, 4, 4}, 0, []int64{1, 2, 3}, false, 4},
		{"bytes: 0 reads from the oldest", 10, 100, []int{4, 4, 4, 4, 4}, 0, []int64{4, 5}, false, 6},
		{"bytes: 1 is lost", 10, 100, []int{4, 4, 4, 4, 4}, 1, nil, true, 4},
		{"bytes: lost just before the oldest", 10, 100, []int{4, 4, 4, 4, 4}, 2, nil, true, 4},
		{"bytes: from the oldest", 10, 100, []int{4, 4, 4, 4, 4}, 3, []int64{4, 5}, false, 6},
		{"bytes: at the end is not lost", 10, 100, []int{4, 4, 4, 4, 4}, 5, []int64{}, false, 6},
		{"count: 0 reads from the oldest", 100, 3, []int{1, 1, 1, 1, 1}, 0, []int64{3, 4, 5}, false, 6},
		{"count: 1 is lost", 100, 3, []int{1, 1, 1, 1, 1}, 1, nil, true, 3},
		{"count: from the oldest", 100, 3, []int{1, 1, 1, 1, 1}, 2, []int64{3, 4, 5}, false, 6},
		{"one chunk over the bound stays alone", 10, 100, []int{4, 10}, 1, []int64{2}, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fillRing(tt.maxBytes, tt.maxChunks, tt.sizes...)
			got := r.read(tt.after, 0)
			if got.lost != tt.wantLost || (!tt.wantLost && !slices.Equal(seqs(got.chunks), tt.want)) || got.next != tt.wantNext {
				t.Errorf("read(%d, 0) after %v = seqs %v next %d lost %v, want %v next %d lost %v", tt.after, tt.sizes, seqs(got.chunks), got.next, got.lost, tt.want, tt.wantNext, tt.wantLost)
			}
			if st := r.stats(); st.footprint > int64(max(tt.maxBytes, slices.Max(tt.sizes))+tt.maxChunks*chunkOverhead) {
				t.Errorf("stats().footprint = %d, beyond the bounds %d bytes, %d chunks", st.footprint, tt.maxBytes, tt.maxChunks)
			}
		})
	}
}

// TestRingEvictsLongRuns appends far more than the ring holds and checks that
// the chunk slice stays bounded and the seqs contiguous.
func TestRingEvictsLongRuns(t *testing.T) {
	r := newRing(1000, 50)
	for i := range 10_000 {
		r.append(Stdout, []byte(strconv.Itoa(i%10)))
	}
	got := r.read(10_000-50, 0)
	if got.lost || len(got.chunks) != 50 || got.chunks[0].Seq != 9951 || got.next != 10_001 {
		t.Fatalf("read(9950, 0) = %d chunks from %v next %d lost %v, want 50 from 9951 next 10001", len(got.chunks), seqs(got.chunks[:1]), got.next, got.lost)
	}
	r.mu.Lock()
	capacity := cap(r.buf)
	r.mu.Unlock()
	if capacity > 4*50+128 {
		t.Errorf("cap(buf) = %d after 10,000 appends to a ring of 50 chunks, want it bounded", capacity)
	}
}

func TestRingWakesWaiters(t *testing.T) {
	r := newRing(100, 100)
	first := r.read(0, 0)
	if first.changed == nil {
		t.Fatal("read(0, 0) on an open ring has no changed channel")
	}
	if isClosed(first.changed) {
		t.Fatal("changed is closed before anything was appended")
	}
	r.append(Stdout, []byte("x"))
	if !isClosed(first.changed) {
		t.Fatal("changed is still open after an append")
	}
	second := r.read(1, 0)
	r.close()
	if !isClosed(second.changed) {
		t.Fatal("changed is still open after close")
	}
	if got := r.read(1, 0); !got.closed || !got.atEnd || got.changed != nil {
		t.Errorf("read(1, 0) after close = closed %v atEnd %v changed %v, want true true nil", got.closed, got.atEnd, got.changed)
	}
}

// TestRingHeadTailMatchesCollector checks that the result derived from the
// ring is the one the headTail collector would have kept.
func TestRingHeadTailMatchesCollector(t *testing.T) {
	writes := []struct {
		name   string
		stream []Stream
		data   []string
	}{
		{"empty", nil, nil},
		{"one stream", []Stream{Stdout, Stdout, Stdout}, []string{"hello ", "wide ", "world"}},
		{"both streams", []Stream{Stdout, Stderr, Stdout, Stderr, Stdout}, []string{"0123", "abc", "456789", "de", "ABCDEFGHIJ"}},
		{"single bytes", []Stream{Stdout, Stdout, Stdout, Stdout, Stdout, Stdout, Stdout}, []string{"a", "b", "c", "d", "e", "f", "g"}},
		{"text", []Stream{Stdout, Stderr, Stdout, Stdout}, []string{"héllo ", "wörld", "✓ 𝄞", " ende"}},
		{"not text", []Stream{Stdout, Stdout}, []string{"\xff\xe2\x9c", "\x93\x80\x80\x80\x80ab"}},
	}
	for _, w := range writes {
		for _, limit := range []int{1, 2, 3, 4, 7, 10, 1000} {
			t.Run(fmt.Sprintf("%s/limit %d", w.name, limit), func(t *testing.T) {
				r := newRing(1<<20, 1000)
				collectors := map[Stream]*headTail{Stdout: newHeadTail(limit), Stderr: newHeadTail(limit)}
				for i, d := range w.data {
					r.append(w.stream[i], []byte(d))
					collectors[w.stream[i]].Write([]byte(d))
				}
				for _, s := range []Stream{Stdout, Stderr} {
					got, want := r.headTail(s, limit), collectors[s].Output()
					if !bytes.Equal(got.Data, want.Data) || got.Total != want.Total || got.Truncated != want.Truncated {
						t.Errorf("headTail(%s, %d) = %q %d %v, want %q %d %v", s, limit, got.Data, got.Total, got.Truncated, want.Data, want.Total, want.Truncated)
					}
				}
			})
		}
	}
}

// TestHeadTailCutsAtCharacters: output kept within a limit, its middle
// dropped, is cut at characters' boundaries, the ring's as the
// collector's: UTF-8 text stays UTF-8 (an answer sends output that is not
// as base64), at most limit bytes, the start of the text and its end.
// Texts that end in a character of several bytes leave a tail too short to
// hold a character's start at the smallest limits (printf é, limit 1).
func TestHeadTailCutsAtCharacters(t *testing.T) {
	for _, text := range []string{"héllo wörld ✓ 𝄞 ünïcödé ✓✓ 𝄞𝄞 ende", "é", "€", "𝄞", "ab€", "x 𝄞", "ü ✓"} {
		headTailCutsAtCharacters(t, text)
	}
}

func headTailCutsAtCharacters(t *testing.T, text string) {
	t.Helper()
	for limit := 1; limit <= len(text); limit++ {
		r := newRing(1<<20, 1000)
		c := newHeadTail(limit)
		for _, piece := range strings.SplitAfter(text, " ") {
			r.append(Stdout, []byte(piece))
			c.Write([]byte(piece))
		}
		for name, got := range map[string]Output{"ring": r.headTail(Stdout, limit), "collector": c.Output()} {
			if !utf8.Valid(got.Data) || len(got.Data) > limit || got.Truncated != (limit < len(text)) || got.Total != int64(len(text)) {
				t.Errorf("%s, limit %d: kept %q (%d bytes, truncated %v, total %d); want UTF-8, at most %d bytes, truncated %v", name, limit, got.Data, len(got.Data), got.Truncated, got.Total, limit, limit < len(text))
			}
		}
	}
}

func TestWriteIDsForgetsTheOldest(t *testing.T) {
	ids := newWriteIDs(maxWriteIDs)
	for i := range maxWriteIDs + 1 {
		ids.put("id-"+strconv.Itoa(i), stdinRecord{written: 1, done: true})
	}
	tests := []struct {
		id   string
		want bool
	}{
		{"id-0", false},
		{"id-1", true},
		{"id-4096", true},
		{"id-4097", false},
	}
	for _, tt := range tests {
		if _, got := ids.recs[tt.id]; got != tt.want {
			t.Errorf("has(%q) after %d ids = %v, want %v", tt.id, maxWriteIDs+1, got, tt.want)
		}
	}
	if len(ids.recs) != maxWriteIDs || len(ids.order) != maxWriteIDs {
		t.Errorf("len(recs), len(order) = %d, %d, want %d", len(ids.recs), len(ids.order), maxWriteIDs)
	}
}
