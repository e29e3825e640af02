package handlers

import (
	"maps"
	"slices"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// policyFrom translates a request's envPolicy; the service validates it.
func policyFrom(p *EnvPolicy) *envpolicy.Policy {
	if p == nil {
		return nil
	}
	inherit := envpolicy.InheritAll
	if p.Inherit != nil {
		inherit = envpolicy.Inherit(*p.Inherit)
	}
	return &envpolicy.Policy{
		Inherit:               inherit,
		IgnoreDefaultExcludes: orZero(p.IgnoreDefaultExcludes),
		Exclude:               orZero(p.Exclude),
		Set:                   orZero(p.Set),
		IncludeOnly:           orZero(p.IncludeOnly),
	}
}

// policyView shows an entry's policy as part of its key: the names set gives,
// never their values.
func policyView(p *envpolicy.Policy) *SnapshotEnvPolicy {
	if p == nil {
		return nil
	}
	out := &SnapshotEnvPolicy{
		Inherit:               SnapshotEnvPolicyInherit(p.Inherit),
		IgnoreDefaultExcludes: p.IgnoreDefaultExcludes,
		SetNames:              slices.Sorted(maps.Keys(p.Set)),
	}
	if out.SetNames == nil {
		out.SetNames = []string{}
	}
	if p.Exclude != nil {
		out.Exclude = &p.Exclude
	}
	if p.IncludeOnly != nil {
		out.IncludeOnly = &p.IncludeOnly
	}
	return out
}
