package shellsnap

import (
	"sort"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/sandbox"
)

// EntryState is an entry's state as the registry shows it.
type EntryState string

// The registry states.
const (
	EntryPending   EntryState = "pending"   // nothing captured yet, or a capture in flight
	EntryReady     EntryState = "ready"     // a snapshot is cached
	EntryFailed    EntryState = "failed"    // the last capture failed; retryable after RetryAt
	EntryExhausted EntryState = "exhausted" // the retry budget is spent: fallback until evicted
)

// EntryInfo is what the registry shows of one cache entry. It carries the
// names of the captured variables, never their values.
type EntryInfo struct {
	Key     string
	ScopeID string
	Shell   Shell
	Cwd     string
	Policy  *envpolicy.Policy
	// Sandbox is the sandbox the snapshot was captured in, part of the key.
	Sandbox sandbox.Policy
	// Terminal is set for a login terminal's snapshot, captured by an
	// interactive login shell (Launch.Terminal), part of the key.
	Terminal      bool
	State         EntryState
	Prewarmed     bool
	Attempts      int
	MaxAttempts   int
	RetryAt       time.Time // zero unless failed
	CapturedAt    time.Time // zero unless ready
	CaptureTime   time.Duration
	StateBytes    int
	EnvNames      []string
	FunctionCount int
	AliasCount    int
	OptionCount   int
	// Unrestored names the pieces of the state a replay leaves out.
	Unrestored []Piece
	Hits       int64
	LastUsedAt time.Time
	LastError  *CaptureError
	// Waiting counts the requests waiting now for this entry's capture.
	Waiting int
}

// entry is one key's snapshot generation and what the registry shows of it.
// Its fields are guarded by the Cache's mutex; the cell guards its own.
type entry struct {
	key        key
	id         string // keyID(key), as shown
	req        Request
	policy     *envpolicy.Policy
	sandbox    sandbox.Policy
	attempts   int
	cell       *cell
	hits       int64
	lastUsedAt time.Time
	lastError  *CaptureError
}

// Entries returns every entry, least recently used first.
func (c *Cache) Entries() []EntryInfo {
	return c.collect(func(*entry) bool { return true })
}

// Scope returns the entries of one scope, least recently used first.
func (c *Cache) Scope(scopeID string) []EntryInfo {
	return c.collect(func(e *entry) bool { return e.key.scopeID == scopeID })
}

// Entry returns the entry a command with req and l would use.
func (c *Cache) Entry(req Request, l Launch) (EntryInfo, bool) {
	k := keyOf(req, l)
	infos := c.collect(func(e *entry) bool { return e.key == k })
	if len(infos) == 0 {
		return EntryInfo{}, false
	}
	return infos[0], true
}

// Forget removes the scope's entries and reports how many there were. A
// capture in flight finishes for those waiting on it, but is not kept.
func (c *Cache) Forget(scopeID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.entries.Front(); el != nil; {
		next := el.Next()
		if el.Value.(*entry).key.scopeID == scopeID {
			c.entries.Remove(el)
			n++
		}
		el = next
	}
	return n
}

// Holds reports whether snap is the snapshot of one of the entries: false
// once it was forgotten, evicted or replaced by a newer capture.
func (c *Cache) Holds(snap *Snapshot) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.entries.Front(); el != nil; el = el.Next() {
		if res, set, _, _ := el.Value.(*entry).cell.peek(); set && res.snap == snap {
			return true
		}
	}
	return false
}

// Len returns the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Len()
}

func (c *Cache) collect(match func(*entry) bool) []EntryInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []EntryInfo
	for el := c.entries.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*entry); match(e) {
			out = append(out, e.info())
		}
	}
	return out
}

// info is e as the registry shows it; the caller holds the Cache's mutex.
func (e *entry) info() EntryInfo {
	in := EntryInfo{
		Key:         e.id,
		ScopeID:     e.req.ScopeID,
		Shell:       e.req.Shell,
		Cwd:         e.key.cwd,
		Policy:      e.policy,
		Sandbox:     e.sandbox,
		Terminal:    e.key.terminal,
		State:       EntryPending,
		Attempts:    e.attempts,
		MaxAttempts: MaxSnapshotAttempts,
		Hits:        e.hits,
		LastUsedAt:  e.lastUsedAt,
		LastError:   e.lastError,
	}
	res, set, running, waiting := e.cell.peek()
	in.Waiting = waiting
	switch {
	case !set && !running && e.lastError != nil:
		// A failed prewarm caches nothing: the next command captures at
		// once, without waiting for a backoff.
		in.State = EntryFailed
	case !set:
	case res.err != nil:
		in.State, in.RetryAt = EntryFailed, res.retryAt
		if e.attempts >= MaxSnapshotAttempts {
			in.State = EntryExhausted
		}
	default:
		in.State = EntryReady
		in.Prewarmed = res.byPrewarm
		in.CapturedAt, in.CaptureTime = res.capturedAt, res.captureDuration
		in.StateBytes = res.snap.StateBytes
		in.FunctionCount, in.AliasCount, in.OptionCount = res.snap.FunctionCount, res.snap.AliasCount, res.snap.OptionCount
		in.Unrestored = res.snap.Unrestored
		in.EnvNames = make([]string, 0, len(res.snap.Env))
		for name := range res.snap.Env {
			in.EnvNames = append(in.EnvNames, name)
		}
		sort.Strings(in.EnvNames)
	}
	return in
}
