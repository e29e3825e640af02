package shellsnap

import (
	"slices"
	"sync"
	"time"
)

// historySize bounds the captures kept for the dashboard's chart and the
// latency quantiles: the work of Stats never grows with the captures served.
const historySize = 256

type captureRecord struct {
	at       time.Time
	duration time.Duration
	ok       bool
}

// captureHistory is a ring of the last historySize captures plus running
// totals, and the command counts by state and outcome.
type captureHistory struct {
	mu       sync.Mutex
	ring     [historySize]captureRecord
	next     int
	n        int
	success  int64
	failure  int64
	commands map[State]map[Outcome]int64
}

func newCaptureHistory() *captureHistory {
	return &captureHistory{commands: map[State]map[Outcome]int64{}}
}

func (h *captureHistory) add(r captureRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.next] = r
	h.next = (h.next + 1) % historySize
	h.n = min(h.n+1, historySize)
	if r.ok {
		h.success++
	} else {
		h.failure++
	}
}

func (h *captureHistory) command(state State, outcome Outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.commands[state] == nil {
		h.commands[state] = map[Outcome]int64{}
	}
	h.commands[state][outcome]++
}

// CaptureSample is one executed capture.
type CaptureSample struct {
	At       time.Time
	Duration time.Duration
	Success  bool
}

// Stats summarizes the cache's captures and commands since start.
type Stats struct {
	Capacity int
	Cached   int
	Success  int64
	Failure  int64
	// Recent holds the last captures, oldest first (at most 256).
	Recent []CaptureSample
	// P50, P90 and P99 are over Recent; zero when there are none.
	P50, P90, P99 time.Duration
	// Commands counts eligible commands by the state they found and their outcome.
	Commands map[State]map[Outcome]int64
}

// Stats returns the summary; its cost is bounded by the history size.
func (c *Cache) Stats() Stats {
	st := Stats{Capacity: MaxCachedSnapshots, Cached: c.Len()}
	h := c.history
	h.mu.Lock()
	st.Success, st.Failure = h.success, h.failure
	st.Recent = make([]CaptureSample, 0, h.n)
	for i := range h.n {
		r := h.ring[(h.next-h.n+i+historySize)%historySize]
		st.Recent = append(st.Recent, CaptureSample{At: r.at, Duration: r.duration, Success: r.ok})
	}
	st.Commands = make(map[State]map[Outcome]int64, len(h.commands))
	for s, byOutcome := range h.commands {
		st.Commands[s] = map[Outcome]int64{OutcomeUsed: byOutcome[OutcomeUsed], OutcomeFallback: byOutcome[OutcomeFallback]}
	}
	h.mu.Unlock()

	durations := make([]time.Duration, len(st.Recent))
	for i, r := range st.Recent {
		durations[i] = r.Duration
	}
	slices.Sort(durations)
	if n := len(durations); n > 0 {
		q := func(p float64) time.Duration { return durations[min(n-1, int(p*float64(n)))] }
		st.P50, st.P90, st.P99 = q(0.5), q(0.9), q(0.99)
	}
	return st
}
