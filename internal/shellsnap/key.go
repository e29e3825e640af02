package shellsnap

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// key identifies a cache entry: the whole request, the cwd, the policy, the
// sandbox and whether it is a login terminal's
// (docs/design/snapshots.md#cache-key). The env is deliberately not part of it.
type key struct {
	scopeID   string
	shellName string
	shellPath string
	cwd       string
	policy    string // canonical JSON of the policy; empty for none
	// sandbox is the sandbox's canonical form (sandbox.Policy.Key), empty
	// for none: a state captured under one sandbox is never replayed under
	// another, nor unconfined, and the other way round.
	sandbox string
	// terminal is set for a login terminal's snapshot (Launch.Terminal),
	// an interactive shell's state that no command replays.
	terminal bool
}

func keyOf(req Request, l Launch) key {
	k := key{scopeID: req.ScopeID, shellName: req.Shell.Name, shellPath: req.Shell.Path, cwd: l.Cwd, sandbox: l.Sandbox.Key(), terminal: l.Terminal}
	if policy := l.Policy; policy != nil {
		// json.Marshal sorts map keys, and keeps the ordered lists in order,
		// which is the reference's structural equality.
		b, _ := json.Marshal(policy)
		k.policy = string(b)
	}
	return k
}

// keyIDSecret returns a new secret for keyID: one per cache, so that ids
// are stable for the cache's life and mean nothing outside it.
func keyIDSecret() []byte {
	return []byte(rand.Text())
}

// keyID is a short stable id of k, safe to show: an HMAC under the cache's
// secret, because a plain hash of the policy could be tested against
// guesses of its set values (a short token, a PIN).
func keyID(secret []byte, k key) string {
	h := hmac.New(sha256.New, secret)
	for _, f := range []string{k.scopeID, k.shellName, k.shellPath, k.cwd, k.policy, k.sandbox} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	if k.terminal {
		h.Write([]byte("terminal"))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
