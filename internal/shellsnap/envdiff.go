package shellsnap

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// The environment a replay gives a command is the request's own, changed as
// the profile changed the capture's: what the profile set is set, what it
// unset is unset, and a list it extended (PATH=$HOME/bin:$PATH) is extended
// the same way around the request's own value. Nothing else of the capture's
// environment reaches the command: a variable only the capturing request sent
// is not in any other request's environment, unless the profile set it.
//
// A profile that branches on a request variable took the branch of the
// capturing request: `: "${PAGER:=less}"` sets PAGER=less when the capture
// had no PAGER, and every replay then sets it, also for a request that sends
// PAGER=more; an `unset` of a variable the capture did not have leaves no
// trace. docs/FIDELITY.md says so.

// envOp is what a replay does to one variable of the request's environment.
type envOp int

const (
	// envSet sets the variable to value, or to prefix + its request value +
	// suffix when relative.
	envSet envOp = iota
	// envUnset removes it.
	envUnset
)

// envChange is one change the profile made to the environment.
type envChange struct {
	name           string
	op             envOp
	value          string
	relative       bool
	prefix, suffix string
}

// identifier matches the names a shell can set, export and unset.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// diffEnv returns the changes that take captureEnv, the environment the
// capture started with, to final, the one its shell ended with (every
// exported variable, its value as raw bytes). Names the policy keeps out of a
// snapshot are not set (kept is final after the policy: filterEnv); the
// shell's own PWD, SHLVL and _, the names in skip (the shell's own, which
// another step restores) and names a shell cannot assign are left alone
// (exported functions travel with the functions).
func diffEnv(captureEnv, final, kept map[string]string, skip map[string]string) []envChange {
	var changes []envChange
	for _, name := range slices.Sorted(maps.Keys(final)) {
		if _, skipped := skip[name]; skipped || !diffable(name) {
			continue
		}
		v := final[name]
		c, had := captureEnv[name]
		if had && c == v {
			continue
		}
		value, ok := kept[name]
		if !ok {
			continue
		}
		ch := envChange{name: name, op: envSet, value: value}
		if had && value == v {
			ch.prefix, ch.suffix, ch.relative = extension(c, v)
		}
		changes = append(changes, ch)
	}
	for _, name := range slices.Sorted(maps.Keys(captureEnv)) {
		if _, ok := final[name]; !ok && diffable(name) && skip[name] == "" {
			changes = append(changes, envChange{name: name, op: envUnset})
		}
	}
	return changes
}

// diffable reports whether a replay restores name through the environment.
func diffable(name string) bool {
	switch name {
	case "PWD", "SHLVL", "_":
		return false
	}
	// The capture's own variables (exported too under a profile's set -a).
	return identifier.MatchString(name) && !strings.HasPrefix(strings.ToUpper(name), internalEnvPrefix)
}

// extension reports whether v is old extended as a colon-separated list: old
// whole, between a prefix that is empty or ends with ':' and a suffix that is
// empty or starts with ':', not both empty. Any other change is a new value.
func extension(old, v string) (prefix, suffix string, ok bool) {
	if old == "" {
		return "", "", false
	}
	for from := 0; ; {
		i := strings.Index(v[from:], old)
		if i < 0 {
			return "", "", false
		}
		i += from
		end := i + len(old)
		if (i == 0 || v[i-1] == ':') && (end == len(v) || v[end] == ':') && (i > 0 || end < len(v)) {
			return v[:i], v[end:], true
		}
		from = i + 1
	}
}

// exportsOf returns the environment section of a capture's output (after its
// first NUL) as NAME=VALUE pairs, values as raw bytes: unlike parseEnv's, it
// keeps values that are not UTF-8, which a replay restores too.
func exportsOf(output []byte) map[string]string {
	env := make(map[string]string)
	_, after, ok := bytes.Cut(output, []byte{0})
	if !ok {
		return env
	}
	for piece := range bytes.SplitSeq(after, []byte{0}) {
		if name, value, ok := strings.Cut(string(piece), "="); ok {
			env[name] = value
		}
	}
	return env
}

// filterEnv applies to a captured environment what parseEnv applies to it but
// for the shell's own names: the managed proxy's stripping, the policy with
// inherit forced to all, and the names never inherited. It returns a new map.
func filterEnv(env map[string]string, policy *envpolicy.Policy) map[string]string {
	env = maps.Clone(env)
	if _, ok := env[ProxyActiveVar]; ok {
		stripManagedProxy(env)
	}
	if policy != nil {
		env = envpolicy.ApplyToSnapshot(*policy, env)
	}
	envpolicy.DropNeverInherited(env)
	return env
}
