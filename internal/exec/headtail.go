package exec

import "sync"

// headTail keeps the first and the last bytes of a stream within a budget: the
// head fills first, then the tail is a ring of the most recent bytes.
type headTail struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte // ring buffer of at most limit-len(head) bytes once the head is full
	start int    // index of the oldest byte in tail once it is full
	total int64
}

func newHeadTail(limit int) *headTail {
	return &headTail{limit: limit}
}

func (h *headTail) Write(p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total += int64(len(p))
	headCap := h.limit / 2
	if room := headCap - len(h.head); room > 0 {
		n := min(room, len(p))
		h.head = append(h.head, p[:n]...)
		p = p[n:]
	}
	tailCap := h.limit - headCap
	if tailCap == 0 {
		return
	}
	if len(p) >= tailCap {
		h.tail = append(h.tail[:0], p[len(p)-tailCap:]...)
		h.start = 0
		return
	}
	for len(p) > 0 {
		if len(h.tail) < tailCap {
			n := min(tailCap-len(h.tail), len(p))
			h.tail = append(h.tail, p[:n]...)
			p = p[n:]
			continue
		}
		n := copy(h.tail[h.start:], p)
		h.start = (h.start + n) % tailCap
		p = p[n:]
	}
}

// Output returns the kept bytes in order and the totals.
func (h *headTail) Output() Output {
	h.mu.Lock()
	defer h.mu.Unlock()
	data := make([]byte, 0, len(h.head)+len(h.tail))
	data = append(data, h.head...)
	data = append(data, h.tail[h.start:]...)
	data = append(data, h.tail[:h.start]...)
	return Output{Data: data, Total: h.total, Truncated: int64(len(data)) < h.total}
}
