package handlers

import (
	"maps"
	"slices"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// policy translates a request's envPolicy and enforces the env limits on its set.
func (s *Server) policy(p *EnvPolicy) (*envpolicy.Policy, error) {
	out, err := policyFrom(p)
	if err != nil || out == nil {
		return out, err
	}
	if err := s.limits.checkEnv("envPolicy.set", out.Set); err != nil {
		return nil, err
	}
	if n := len(out.Exclude) + len(out.IncludeOnly); s.limits.MaxEnv > 0 && n > s.limits.MaxEnv {
		return nil, invalidf("envPolicy", "envPolicy has %d patterns; the limit is %d", n, s.limits.MaxEnv)
	}
	return out, nil
}

// policyFrom translates a request's envPolicy and checks what the contract
// cannot say (names with '=' or NUL, values with NUL).
func policyFrom(p *EnvPolicy) (*envpolicy.Policy, error) {
	if p == nil {
		return nil, nil
	}
	out := envpolicy.Policy{Inherit: envpolicy.InheritAll}
	if p.Inherit != nil {
		out.Inherit = envpolicy.Inherit(*p.Inherit)
	}
	if p.IgnoreDefaultExcludes != nil {
		out.IgnoreDefaultExcludes = *p.IgnoreDefaultExcludes
	}
	if p.Exclude != nil {
		out.Exclude = *p.Exclude
	}
	if p.Set != nil {
		out.Set = *p.Set
	}
	if p.IncludeOnly != nil {
		out.IncludeOnly = *p.IncludeOnly
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return &out, nil
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
