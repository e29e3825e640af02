package sandbox

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	many := make([]string, MaxWritableRoots+1)
	for i := range many {
		many[i] = "/tmp"
	}
	tests := []struct {
		name   string
		policy Policy
		field  string // "" means valid
	}{
		{"zero", Policy{}, ""},
		{"roots", Policy{WritableRoots: []string{"/tmp", "/work/x"}, Network: NetworkNone}, ""},
		{"read only", Policy{ReadOnly: true, Network: NetworkLoopback}, ""},
		{"full", Policy{Network: NetworkFull}, ""},
		{"relative root", Policy{WritableRoots: []string{"/tmp", "work"}}, "sandbox.writableRoots[1]"},
		{"empty root", Policy{WritableRoots: []string{""}}, "sandbox.writableRoots[0]"},
		{"NUL in root", Policy{WritableRoots: []string{"/tmp/a\x00b"}}, "sandbox.writableRoots[0]"},
		{"too many roots", Policy{WritableRoots: many}, "sandbox.writableRoots"},
		{"read only with roots", Policy{ReadOnly: true, WritableRoots: []string{"/tmp"}}, "sandbox.readOnly"},
		{"unknown network", Policy{Network: "host"}, "sandbox.network"},
		{"network in capitals", Policy{Network: "None"}, "sandbox.network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Validate()
			var fe *FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate(%+v) = %v, want nil", tt.policy, err)
			case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field):
				t.Errorf("Validate(%+v) = %v, want a *FieldError on %s", tt.policy, err, tt.field)
			case fe != nil && strings.ContainsRune(fe.Reason, 0):
				t.Errorf("Validate(%+v) reason %q carries the NUL", tt.policy, fe.Reason)
			}
		})
	}
}

func TestIsZero(t *testing.T) {
	tests := []struct {
		policy Policy
		want   bool
	}{
		{Policy{}, true},
		{Policy{Network: NetworkFull}, true},
		{Policy{WritableRoots: []string{}}, true},
		{Policy{ReadOnly: true}, false},
		{Policy{WritableRoots: []string{"/tmp"}}, false},
		{Policy{Network: NetworkNone}, false},
		{Policy{Network: NetworkLoopback}, false},
	}
	for _, tt := range tests {
		if got := tt.policy.IsZero(); got != tt.want {
			t.Errorf("%+v.IsZero() = %v, want %v", tt.policy, got, tt.want)
		}
	}
}

func TestWithWritable(t *testing.T) {
	roots := []string{"/a", "/b"}
	tests := []struct {
		name   string
		policy Policy
		want   Policy
	}{
		{"none", Policy{}, Policy{}},
		{"network only", Policy{Network: NetworkNone}, Policy{Network: NetworkNone}},
		// The server's own root is kept apart from the request's, which
		// alone are held off its private directories (openRoots).
		{"read-only", Policy{ReadOnly: true, Network: NetworkLoopback}, Policy{Network: NetworkLoopback, scratch: []string{"/d"}}},
		{"roots", Policy{WritableRoots: roots[:1:2]}, Policy{WritableRoots: []string{"/a"}, scratch: []string{"/d"}}},
		{"scratch", Policy{WritableRoots: roots[:1:2], scratch: roots[1:2:2]}, Policy{WritableRoots: []string{"/a"}, scratch: []string{"/b", "/d"}}},
	}
	for _, tt := range tests {
		got := tt.policy.WithWritable("/d")
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v.WithWritable(/d) = %+v, want %+v", tt.name, tt.policy, got, tt.want)
		}
		if !reflect.DeepEqual(got.roots(), append(slices.Clone(tt.want.WritableRoots), tt.want.scratch...)) {
			t.Errorf("%s: roots() = %q", tt.name, got.roots())
		}
	}
	if roots[1] != "/b" {
		t.Errorf("WithWritable wrote into its policy's roots: %q", roots)
	}
}

// TestKey: policies that confine alike share a key, and any difference in
// what is confined gives another.
func TestKey(t *testing.T) {
	same := [][]Policy{
		{{}, {Network: NetworkFull}, {WritableRoots: []string{}}},
		{{WritableRoots: []string{"/a", "/b"}}, {WritableRoots: []string{"/b/", "/a", "/a/./"}}, {WritableRoots: []string{"/b", "/a"}, Network: NetworkFull}},
		{{ReadOnly: true, Network: NetworkNone}, {ReadOnly: true, Network: NetworkNone}},
	}
	for _, group := range same {
		for _, p := range group[1:] {
			if got, want := p.Key(), group[0].Key(); got != want {
				t.Errorf("%+v.Key() = %q, want %q (the key of %+v)", p, got, want, group[0])
			}
		}
	}
	distinct := []Policy{
		{},
		{ReadOnly: true},
		{ReadOnly: true, Network: NetworkNone},
		{ReadOnly: true, Network: NetworkLoopback},
		{Network: NetworkNone},
		{WritableRoots: []string{"/a"}},
		{WritableRoots: []string{"/a", "/b"}},
		{WritableRoots: []string{"/a\x00/b"}},
		{WritableRoots: []string{"/a"}, Network: NetworkNone},
	}
	seen := map[string]Policy{}
	for _, p := range distinct {
		if q, ok := seen[p.Key()]; ok {
			t.Errorf("%+v and %+v share the key %q", p, q, p.Key())
		}
		seen[p.Key()] = p
	}
	if (Policy{}).Key() != "" {
		t.Errorf("Policy{}.Key() = %q, want \"\"", Policy{}.Key())
	}
}
