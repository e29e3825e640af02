package shellsnap

import (
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

// keyID is a short stable id of a key, safe to show.
func keyID(k key) string {
	h := sha256.New()
	for _, f := range []string{k.scopeID, k.shellName, k.shellPath, k.cwd, k.policy, k.sandbox} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
