package exec

import (
	"sync"
	"unicode/utf8"
)

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
	return keptOutput(data, len(h.head), h.total)
}

// keptOutput is the Output of data, the first headLen bytes of a stream of
// total bytes and the last of the rest. When the middle was dropped, the
// two cuts are moved to characters' boundaries: a character a cut split is
// dropped whole, so that UTF-8 text stays UTF-8 (an answer sends output
// that is not as base64). Bytes that are not UTF-8 are cut where they are.
func keptOutput(data []byte, headLen int, total int64) Output {
	if int64(len(data)) == total {
		return Output{Data: data, Total: total}
	}
	head, tail := data[:headLen], data[headLen:]
	for i := len(head) - 1; i >= 0 && i > len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	for i := 0; i < utf8.UTFMax; i++ {
		if i == len(tail) {
			// Fewer bytes than a character has, none of them its start:
			// the end of a character the cut split.
			tail = tail[:0]
			break
		}
		if utf8.RuneStart(tail[i]) {
			tail = tail[i:]
			break
		}
	}
	return Output{Data: append(head, tail...), Total: total, Truncated: true}
}
