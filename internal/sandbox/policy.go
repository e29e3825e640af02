package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Network says what a sandboxed command may reach over the network.
type Network string

// The network modes of the wire enum.
const (
	// NetworkFull leaves the network as the server has it.
	NetworkFull Network = "full"
	// NetworkLoopback gives the command a private loopback of its own: its
	// processes reach each other on 127.0.0.1 and ::1, and nothing else, not
	// even the server's host's loopback services.
	NetworkLoopback Network = "loopback"
	// NetworkNone gives the command no network at all.
	NetworkNone Network = "none"
)

// MaxWritableRoots bounds Policy.WritableRoots: each root is a Landlock rule
// opened at every spawn.
const MaxWritableRoots = 64

// Policy is what a sandboxed command may do (the wire sandbox object). The
// zero value confines nothing: the command runs as it would unsandboxed.
//
// The filesystem is confined when ReadOnly is set or WritableRoots is not
// empty: the command may then read everything but write only beneath
// WritableRoots, besides /dev/null, /dev/tty and the terminals under /dev/pts
// and /dev/ptmx. ReadOnly is the explicit way to ask for no writable root at
// all, so that an empty list is never mistaken for a confinement.
type Policy struct {
	// WritableRoots lists absolute paths beneath which the command may create,
	// write, rename and remove files.
	WritableRoots []string
	// ReadOnly forbids every write but to the devices above; it excludes
	// WritableRoots.
	ReadOnly bool
	// Network is the network mode; "" means NetworkFull.
	Network Network

	// scratch lists the directories the server makes writable for a
	// command itself (WithWritable): its own, which may lie beneath its
	// private directories, where no root of a request may.
	scratch []string
}

// IsZero reports whether p confines nothing, so that no sandbox is needed.
func (p Policy) IsZero() bool {
	return !p.confinesFiles() && p.network() == NetworkFull
}

// Key is p's canonical form, for keys of what was made under p (a shell
// snapshot, a standby shell): two policies that confine alike have the same
// key, whatever the order, spelling or repetition of their roots, and the
// zero policy's is "". The roots are quoted, so that no root's bytes can be
// taken for a separator.
func (p Policy) Key() string {
	if p.IsZero() {
		return ""
	}
	roots := make([]string, len(p.WritableRoots))
	for i, r := range p.WritableRoots {
		roots[i] = filepath.Clean(r)
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	return fmt.Sprintf("network=%s readOnly=%t writableRoots=%q", p.network(), p.ReadOnly, roots)
}

// WithWritable returns p with dir writable as well, for a file the server
// reads back from a confined command (a session's end state): a policy that
// confines files gains dir as a root (a read-only one becomes dir's alone);
// one that does not is returned as it is.
func (p Policy) WithWritable(dir string) Policy {
	if !p.confinesFiles() {
		return p
	}
	p.ReadOnly = false
	p.scratch = append(slices.Clip(p.scratch), dir)
	return p
}

func (p Policy) confinesFiles() bool {
	return p.ReadOnly || len(p.WritableRoots) > 0 || len(p.scratch) > 0
}

// roots are the writable roots of a spawn under p: the request's, then the
// server's own (WithWritable).
func (p Policy) roots() []string { return append(slices.Clip(p.WritableRoots), p.scratch...) }

func (p Policy) network() Network {
	if p.Network == "" {
		return NetworkFull
	}
	return p.Network
}

// FieldError reports a malformed field of a policy.
type FieldError struct {
	// Field names the field, like sandbox.writableRoots[2].
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error returns the field and the reason.
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Validate reports the first malformed field of p as a *FieldError, in wire
// order: more than MaxWritableRoots roots, a root that is empty, relative or
// contains NUL, ReadOnly together with roots, an unknown network mode. It
// does not look at the filesystem: a root that does not exist is reported
// by Sandbox.Start.
func (p Policy) Validate() error {
	if len(p.WritableRoots) > MaxWritableRoots {
		return &FieldError{
			Field:  "sandbox.writableRoots",
			Reason: fmt.Sprintf("%d roots; at most %d", len(p.WritableRoots), MaxWritableRoots),
		}
	}
	for i, root := range p.WritableRoots {
		reason := ""
		switch {
		case strings.ContainsRune(root, 0):
			reason = "path contains NUL"
		case !filepath.IsAbs(root):
			reason = "path is not absolute"
		default:
			continue
		}
		return &FieldError{Field: fmt.Sprintf("sandbox.writableRoots[%d]", i), Reason: reason}
	}
	if p.ReadOnly && len(p.WritableRoots) > 0 {
		return &FieldError{Field: "sandbox.readOnly", Reason: "readOnly excludes writableRoots"}
	}
	switch p.Network {
	case "", NetworkFull, NetworkLoopback, NetworkNone:
	default:
		return &FieldError{
			Field:  "sandbox.network",
			Reason: fmt.Sprintf("unknown value %q; want none, loopback or full", string(p.Network)),
		}
	}
	return nil
}
