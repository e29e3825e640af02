package handlers

import (
	"slices"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// sandboxFrom translates a request's sandbox; nil (absent) leaves the
// server's default to the service.
func sandboxFrom(b *Sandbox) *sandbox.Policy {
	if b == nil {
		return nil
	}
	return &sandbox.Policy{
		WritableRoots: orZero(b.WritableRoots),
		ReadOnly:      orZero(b.ReadOnly),
		Network:       sandbox.Network(orZero(b.Network)),
	}
}

// sandboxView shows the sandbox of a snapshot entry, nil for none.
func sandboxView(p sandbox.Policy) *Sandbox {
	if p.IsZero() {
		return nil
	}
	out := &Sandbox{}
	if len(p.WritableRoots) > 0 {
		roots := slices.Clone(p.WritableRoots)
		out.WritableRoots = &roots
	}
	if p.ReadOnly {
		out.ReadOnly = &p.ReadOnly
	}
	if p.Network != "" {
		network := SandboxNetwork(p.Network)
		out.Network = &network
	}
	return out
}

// sandboxReport is how a process was confined, as the answers show it.
func sandboxReport(r sandbox.Report) SandboxReport {
	if r.Type != sandbox.TypeLandlock {
		return SandboxReport{Type: SandboxReportTypeNone}
	}
	abi, mounts := r.ABI, r.ReadOnlyMounts
	return SandboxReport{Type: SandboxReportTypeLandlock, Abi: &abi, ReadOnlyMounts: &mounts}
}
