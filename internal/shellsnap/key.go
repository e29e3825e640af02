package shellsnap

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// key identifies a cache entry: the whole request, the cwd and the policy
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
}

func keyOf(req Request, l Launch) key {
	k := key{scopeID: req.ScopeID, shellName: req.Shell.Name, shellPath: req.Shell.Path, cwd: l.Cwd, sandbox: l.Sandbox.Key()}
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
	return hex.EncodeToString(h.Sum(nil))[:12]
}
