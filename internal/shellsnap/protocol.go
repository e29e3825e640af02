package shellsnap

// Limits and names of the snapshot protocol (docs/design/snapshots.md).
const (
	// MaxSnapshotBytes bounds the raw stdout of a capture (512 KiB): the capture
	// reads one byte more and rejects the output when it is larger.
	MaxSnapshotBytes = 524288
	// MaxScopeBytes bounds a scope id, which must also be non-empty.
	MaxScopeBytes = 256
	// StateMarker starts the restorable state in a capture's output; what a
	// profile prints before it is discarded.
	StateMarker = "# Snapshot file"
	// ProxyActiveVar, when present in a captured environment, marks it as built
	// under a managed network proxy, whose variables must not be cached.
	ProxyActiveVar = "CODEX_NETWORK_PROXY_ACTIVE"
)
