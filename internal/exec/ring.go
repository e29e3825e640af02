package exec

import "sync"

// Chunk is one read of a process's output: stdout and stderr share one seq
// counter, which starts at 1, so the seqs of a process order its output across
// both streams (a process on a terminal has the one stream Pty). Data is shared with every reader of the chunk and must not be
// modified.
type Chunk struct {
	Seq    int64
	Stream Stream
	Data   []byte
}

// chunkOverhead is what a retained chunk costs beyond its data: its header in
// the ring and the rounding of its allocation. It makes the byte budgets honest
// for output that arrives a few bytes at a time.
const chunkOverhead = 64

// ring is a process's retained output: the most recent chunks of both streams,
// bounded by bytes and by count, the oldest evicted first. The child's reader
// goroutines append; any number of readers read. Each holds the mutex only to
// copy chunk headers, never data, so no reader blocks the writer or another
// reader for longer than that.
type ring struct {
	mu        sync.Mutex
	maxBytes  int
	maxChunks int

	buf   []Chunk // buf[start:] are the retained chunks, oldest first
	start int
	bytes int // data bytes of the retained chunks

	nextSeq int64    // seq of the next chunk; the retained ones are nextSeq-len(buf[start:]) ...
	total   [2]int64 // bytes produced per stream
	evicted [2]bool  // whether a chunk of the stream was evicted
	closed  bool     // no chunk will follow

	changed chan struct{} // closed and replaced on every append and on close, once someone waits
	watched bool          // whether changed was handed out since it was made

	feeds []*Feed // handed each chunk as it is appended
}

func newRing(maxBytes, maxChunks int) *ring {
	return &ring{maxBytes: maxBytes, maxChunks: maxChunks, nextSeq: 1, changed: make(chan struct{})}
}

func streamIndex(s Stream) int {
	if s == Stderr {
		return 1
	}
	return 0
}

// append retains a copy of data as the next chunk of stream s. Data must not be
// longer than the ring's byte bound (the readers' buffers ensure it).
func (r *ring) append(s Stream, data []byte) {
	if len(data) == 0 {
		return
	}
	c := Chunk{Stream: s, Data: append([]byte(nil), data...)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	c.Seq = r.nextSeq
	r.nextSeq++
	r.total[streamIndex(s)] += int64(len(data))
	r.buf = append(r.buf, c)
	r.bytes += len(data)
	for n := len(r.buf) - r.start; n > 1 && (r.bytes > r.maxBytes || n > r.maxChunks); n-- {
		old := r.buf[r.start]
		r.evicted[streamIndex(old.Stream)] = true
		r.bytes -= len(old.Data)
		r.buf[r.start] = Chunk{} // let the data go
		r.start++
	}
	if r.start > 64 && r.start >= len(r.buf)/2 {
		n := copy(r.buf, r.buf[r.start:])
		clear(r.buf[n:])
		r.buf, r.start = r.buf[:n], 0
	}
	for _, f := range r.feeds {
		f.offerLocked(c)
	}
	r.notifyLocked()
}

// close records that the output is complete, wakes the waiters, and gives back
// the headroom of the chunk slice: a closed ring only shrinks.
func (r *ring) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if live := r.buf[r.start:]; cap(r.buf) > len(live)+len(live)/4+8 {
		r.buf, r.start = append([]Chunk(nil), live...), 0
	}
	for _, f := range r.feeds {
		f.wake()
	}
	r.notifyLocked()
}

func (r *ring) notifyLocked() {
	if r.watched {
		close(r.changed)
		r.changed, r.watched = make(chan struct{}), false
	}
}

// ringRead is one read of the ring.
type ringRead struct {
	chunks  []Chunk
	next    int64 // seq after the last returned chunk, or the ring's next seq
	oldest  int64 // seq of the oldest retained chunk, or the ring's next seq when none is
	lost    bool  // chunks after the asked-for seq were evicted
	closed  bool  // the output is complete
	atEnd   bool  // nothing is retained after next
	changed <-chan struct{}
}

// read returns the retained chunks with seq > after, within maxBytes when it
// is positive (docs/design/processes.md#reading-output): at least one chunk,
// and it stops before a chunk that would exceed the budget or once the
// budget is reached. after 0 reads from the oldest retained chunk, whatever
// was evicted before it. changed is closed on the next append or close.
func (r *ring) read(after int64, maxBytes int) ringRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.readLocked(after, maxBytes)
	if !res.closed && !res.lost {
		r.watched = true
		res.changed = r.changed
	}
	return res
}

// readLocked is read without the wake-up channel; r.mu is held.
func (r *ring) readLocked(after int64, maxBytes int) ringRead {
	after = max(after, 0)
	live := r.buf[r.start:]
	res := ringRead{oldest: r.nextSeq - int64(len(live)), closed: r.closed}
	if after == 0 {
		after = res.oldest - 1
	}
	// A positive after whose next chunks were evicted is a loss; asking at
	// the current end (everything was evicted but nothing after it) is not.
	if after+1 < res.oldest {
		res.lost, res.next = true, res.oldest
		return res
	}
	if i := after + 1 - res.oldest; i < int64(len(live)) {
		n, total := 0, 0
		for _, c := range live[i:] {
			if maxBytes > 0 && n > 0 && (total >= maxBytes || total+len(c.Data) > maxBytes) {
				break
			}
			n++
			total += len(c.Data)
		}
		res.chunks = append([]Chunk(nil), live[i:i+int64(n)]...)
		res.next = res.chunks[n-1].Seq + 1
	} else {
		res.next = r.nextSeq
	}
	res.atEnd = res.next >= r.nextSeq
	return res
}

// ringStats is a cheap summary of the ring.
type ringStats struct {
	nextSeq   int64
	total     [2]int64
	footprint int64 // retained data bytes plus the per-chunk overhead
}

func (r *ring) stats() ringStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.buf) - r.start
	return ringStats{nextSeq: r.nextSeq, total: r.total, footprint: int64(r.bytes) + int64(n)*chunkOverhead}
}

// complete reports whether the ring still holds every byte stream s produced.
func (r *ring) complete(s Stream) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.evicted[streamIndex(s)]
}

// headTail returns stream s's output kept within limit as a headTail collector
// would keep it: the first limit/2 bytes, then the last of the rest. It is
// exact only while complete(s) holds.
func (r *ring) headTail(s Stream, limit int) Output {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := r.total[streamIndex(s)]
	headLen := min(int64(limit/2), total)
	tailLen := min(int64(limit-limit/2), total-headLen)
	tailFrom := total - tailLen // stream offset where the tail starts
	data := make([]byte, 0, headLen+tailLen)
	var off int64 // stream offset of the chunk
	for _, c := range r.buf[r.start:] {
		if c.Stream != s {
			continue
		}
		end := off + int64(len(c.Data))
		if off < headLen {
			data = append(data, c.Data[:min(end, headLen)-off]...)
		}
		if end > tailFrom {
			data = append(data, c.Data[max(tailFrom, headLen, off)-off:]...)
		}
		off = end
	}
	return keptOutput(data, int(headLen), total)
}
