package shellsnap

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// FuzzParse feeds parseCapture arbitrary capture output under testNonce,
// with or without a policy, and checks what every caller relies on. It also
// checks a round trip: a well-formed capture built from state (a record's
// payload) and exports parses back exactly.
//
// Arguments: output is the raw capture stdout; exclude and includeOnly are
// ';'-separated pattern lists and set a "NAME:VALUE;NAME:VALUE" list, made valid
// as the handlers would have required (Policy.Validate); mode bit 0 turns the
// policy on, bit 1 sets IgnoreDefaultExcludes; state and exports feed the round
// trip (exports as env -0 prints them: NAME=VALUE pieces separated by NUL).
//
// The seed corpus is testdata/fuzz/FuzzParse: real bash, zsh and sh captures
// under testNonce, the reference's parse cases, proxy stripping, and the
// error cases.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, output []byte, exclude, set, includeOnly string, mode uint8, state string, exports []byte) {
		var policy *envpolicy.Policy
		if mode&1 != 0 {
			policy = &envpolicy.Policy{
				Inherit:               envpolicy.InheritAll,
				IgnoreDefaultExcludes: mode&2 != 0,
				Exclude:               fuzzPatternList(exclude),
				Set:                   fuzzSetList(set),
				IncludeOnly:           fuzzPatternList(includeOnly),
			}
			if err := policy.Validate(); err != nil {
				t.Fatalf("the fuzz policy %+v is invalid: %v", policy, err)
			}
		}
		checkParse(t, output, policy)
		checkRoundTrip(t, state, exports)
	})
}

// checkParse checks parseCapture's invariants on any input.
func checkParse(t *testing.T, output []byte, policy *envpolicy.Policy) {
	t.Helper()
	var policySet map[string]string
	if policy != nil {
		policySet = maps.Clone(policy.Set)
	}
	snap, recs, err := parseCapture(output, policy, testNonce)
	if policy != nil && !maps.Equal(policy.Set, policySet) {
		t.Errorf("parseCapture modified the policy's Set: %v, was %v", policy.Set, policySet)
	}
	if err != nil {
		var ce *CaptureError
		if !errors.As(err, &ce) {
			t.Fatalf("parseCapture(%q) error %T %v, want a *CaptureError", output, err, err)
		}
		switch ce.Reason {
		case ReasonMissingEnvironment, ReasonMissingState:
		default:
			t.Errorf("parseCapture(%q) error reason %q, want missing_environment or missing_state", output, ce.Reason)
		}
		if ce.Message == "" {
			t.Errorf("parseCapture(%q) error %+v has no message", output, ce)
		}
		if snap != nil || recs != nil {
			t.Errorf("parseCapture(%q) = %+v, %q with error %v, want nil", output, snap, recs, err)
		}
		return
	}
	if snap == nil {
		t.Fatalf("parseCapture(%q) = nil, nil", output)
	}
	before, _, _ := bytes.Cut(output, []byte{0})
	if snap.StateBytes > len(before) || !bytes.HasPrefix(before[len(before)-snap.StateBytes:], []byte(StateMarker+"\n"+testNonce+" begin ")) {
		t.Errorf("parseCapture(%q).StateBytes = %d, want the output from the marker and its begin record to the NUL", output, snap.StateBytes)
	}
	for _, r := range recs {
		if r.kind == "" || r.kind == "begin" || r.kind == "end" {
			t.Errorf("parseCapture(%q) has a record of kind %q", output, r.kind)
		}
	}
	// The exports as parseCapture must have read them: after the first NUL,
	// the valid NAME=VALUE pieces, a later one winning.
	exported := parsedExports(output)
	for name, value := range snap.Env {
		if strings.ContainsAny(name, "=\x00") || strings.ContainsRune(value, 0) {
			t.Errorf("parseCapture(%q).Env has %q=%q: a name with '=' or NUL, or a value with NUL", output, name, value)
		}
		if !utf8.ValidString(name) || !utf8.ValidString(value) {
			t.Errorf("parseCapture(%q).Env has %q=%q, not UTF-8", output, name, value)
		}
		switch name {
		case "PWD", "OLDPWD", "SHLVL", "_":
			t.Errorf("parseCapture(%q).Env keeps %s", output, name)
		}
		if envpolicy.IsNeverInherited(name) {
			t.Errorf("parseCapture(%q).Env keeps the never-inherited %s", output, name)
		}
		if policy == nil {
			if want, ok := exported[name]; !ok || want != value {
				t.Errorf("parseCapture(%q, nil).Env[%q] = %q; the capture exported %q (%v)", output, name, value, want, ok)
			}
			continue
		}
		setValue, inSet := policy.Set[name]
		exportedValue, wasExported := exported[name]
		matches := func(pattern string) bool { return envpolicy.Match(pattern, name) }
		switch {
		case inSet && value != setValue:
			t.Errorf("parseCapture(%q, %+v).Env[%q] = %q, want Set's %q", output, policy, name, value, setValue)
		case !inSet && (!wasExported || exportedValue != value):
			t.Errorf("parseCapture(%q, %+v).Env[%q] = %q, neither exported nor Set", output, policy, name, value)
		case !inSet && slices.ContainsFunc(policy.Exclude, matches):
			t.Errorf("parseCapture(%q, %+v).Env keeps %q, which an Exclude pattern matches", output, policy, name)
		case !inSet && !policy.IgnoreDefaultExcludes && slices.ContainsFunc([]string{"*KEY*", "*SECRET*", "*TOKEN*"}, matches):
			t.Errorf("parseCapture(%q, %+v).Env keeps %q, which a default exclude matches", output, policy, name)
		case len(policy.IncludeOnly) > 0 && !slices.ContainsFunc(policy.IncludeOnly, matches):
			t.Errorf("parseCapture(%q, %+v).Env keeps %q, which no IncludeOnly pattern matches", output, policy, name)
		}
	}
}

// checkRoundTrip builds a well-formed capture of one record whose payload is
// state, any bytes but NUL and the nonce, and exports, and checks that
// parseCapture returns exactly them, less the names it documents dropping.
func checkRoundTrip(t *testing.T, state string, exports []byte) {
	t.Helper()
	state = strings.ReplaceAll(state, "\x00", "")
	for strings.Contains(state, testNonce) {
		state = strings.ReplaceAll(state, testNonce, "")
	}
	recs := []record{{kind: "vars", payload: state}}
	want := make(map[string]string)
	var pieces []string
	for piece := range bytes.SplitSeq(exports, []byte{0}) {
		name, value, _ := strings.Cut(strings.ToValidUTF8(string(piece), "\uFFFD"), "=")
		if name == "" {
			continue
		}
		want[name] = value
		pieces = append(pieces, name+"="+value)
	}
	out := captureOutput(testNonce, "bash", "profile noise\n", recs, pieces...)
	snap, got, err := parseCapture(out, nil, testNonce)
	if err != nil {
		t.Fatalf("parseCapture(%q) error = %v, want the state and exports back", out, err)
	}
	if !slices.Equal(got, recs) {
		t.Errorf("parseCapture(%q) records = %q, want %q", out, got, recs)
	}
	_, proxied := want[ProxyActiveVar]
	for name, value := range want {
		got, kept := snap.Env[name]
		switch dropped := name == "PWD" || name == "OLDPWD" || name == "SHLVL" || name == "_" || envpolicy.IsNeverInherited(name); {
		case dropped && kept:
			t.Errorf("parseCapture(%q).Env keeps %s, which it must drop", out, name)
		case dropped:
		case proxied && isProxyEnvKey(name):
			if kept {
				t.Errorf("parseCapture(%q).Env keeps the proxy variable %s under %s", out, name, ProxyActiveVar)
			}
		case proxied && isBrokeredCredentialKey(name) && !kept:
			// A brokered credential still at its dummy value is stripped.
		case !kept || got != value:
			t.Errorf("parseCapture(%q).Env[%q] = %q, %v, want %q", out, name, got, kept, value)
		}
	}
	for name := range snap.Env {
		if _, ok := want[name]; !ok {
			t.Errorf("parseCapture(%q).Env has %q, which was not exported", out, name)
		}
	}
}

// parsedExports reads output's exports the way the capture format defines them.
func parsedExports(output []byte) map[string]string {
	env := make(map[string]string)
	_, rest, ok := bytes.Cut(output, []byte{0})
	if !ok {
		return env
	}
	for _, piece := range bytes.Split(rest, []byte{0}) {
		if !utf8.Valid(piece) {
			continue
		}
		if name, value, ok := strings.Cut(string(piece), "="); ok {
			env[name] = value
		}
	}
	return env
}

// fuzzPatternList splits a ';'-separated list into UTF-8 patterns without NUL.
func fuzzPatternList(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(strings.ToValidUTF8(strings.ReplaceAll(list, "\x00", ""), "\uFFFD"), ";")
}

// fuzzSetList reads "NAME:VALUE;NAME:VALUE" into a Set that Validate accepts,
// in UTF-8 as every request body is (the handlers refuse any other).
func fuzzSetList(list string) map[string]string {
	if list == "" {
		return nil
	}
	set := make(map[string]string)
	list = strings.ToValidUTF8(strings.ReplaceAll(list, "\x00", ""), "\uFFFD")
	for _, pair := range strings.Split(list, ";") {
		name, value, _ := strings.Cut(pair, ":")
		if name = strings.ReplaceAll(name, "=", ""); name != "" {
			set[name] = value
		}
	}
	return set
}
