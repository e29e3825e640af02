package envpolicy

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		policy    Policy
		wantField string // "" means valid
	}{
		{"zero", Policy{}, ""},
		{"inherit all", Policy{Inherit: InheritAll}, ""},
		{"inherit core", Policy{Inherit: InheritCore}, ""},
		{"inherit none", Policy{Inherit: InheritNone}, ""},
		{"full", Policy{
			Inherit:               InheritCore,
			IgnoreDefaultExcludes: true,
			Exclude:               []string{"AWS_*", "", "?"},
			Set:                   map[string]string{"A": "x=y", "B": ""},
			IncludeOnly:           []string{"*"},
		}, ""},
		{"unknown inherit", Policy{Inherit: "some"}, "envPolicy.inherit"},
		{"inherit is case-sensitive", Policy{Inherit: "ALL"}, "envPolicy.inherit"},
		{"exclude with NUL", Policy{Exclude: []string{"A", "B", "C\x00"}}, "envPolicy.exclude[2]"},
		{"set empty name", Policy{Set: map[string]string{"": "x"}}, `envPolicy.set[""]`},
		{"set name with equals", Policy{Set: map[string]string{"A=B": "x"}}, `envPolicy.set["A=B"]`},
		{"set name with NUL", Policy{Set: map[string]string{"A\x00": "x"}}, `envPolicy.set["A\x00"]`},
		{"set value with NUL", Policy{Set: map[string]string{"A": "x\x00y"}}, `envPolicy.set["A"]`},
		{"set first bad name in order", Policy{Set: map[string]string{"B=": "", "A=": ""}}, `envPolicy.set["A="]`},
		{"includeOnly with NUL", Policy{IncludeOnly: []string{"\x00"}}, "envPolicy.includeOnly[0]"},
		{"inherit reported first", Policy{Inherit: "x", Exclude: []string{"\x00"}}, "envPolicy.inherit"},
		{"exclude before set", Policy{Exclude: []string{"\x00"}, Set: map[string]string{"": ""}}, "envPolicy.exclude[0]"},
		{"set before includeOnly", Policy{Set: map[string]string{"": ""}, IncludeOnly: []string{"\x00"}}, `envPolicy.set[""]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFieldError(t, "Validate()", tt.policy.Validate(), tt.wantField)
		})
	}
}

func TestValidateVars(t *testing.T) {
	tests := []struct {
		name      string
		prefix    string
		vars      map[string]string
		wantField string // "" means valid
	}{
		{"nil", "env", nil, ""},
		{"good", "env", map[string]string{"A": "1", "b_2": "x=y", "EMPTY": ""}, ""},
		{"empty name", "env", map[string]string{"": "x"}, `env[""]`},
		{"name with equals", "env", map[string]string{"A=B": "x"}, `env["A=B"]`},
		{"name with NUL", "env", map[string]string{"A\x00B": "x"}, `env["A\x00B"]`},
		{"value with NUL", "env", map[string]string{"A": "\x00"}, `env["A"]`},
		{"first bad name in order", "env", map[string]string{"Z=": "", "A": "\x00"}, `env["A"]`},
		{"other prefix", "request.env", map[string]string{"=": ""}, `request.env["="]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFieldError(t, "ValidateVars", ValidateVars(tt.prefix, tt.vars), tt.wantField)
		})
	}
}

// checkFieldError checks that err is nil when wantField is empty, and otherwise a
// *FieldError for wantField whose message names the field.
func checkFieldError(t *testing.T, call string, err error, wantField string) {
	t.Helper()
	if wantField == "" {
		if err != nil {
			t.Errorf("%s = %v, want nil", call, err)
		}
		return
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("%s = %v, want a *FieldError for %s", call, err, wantField)
	}
	if fe.Field != wantField {
		t.Errorf("%s field = %s, want %s", call, fe.Field, wantField)
	}
	if fe.Reason == "" || !strings.HasPrefix(fe.Error(), wantField+": ") {
		t.Errorf("%s = %q, want %q followed by a reason", call, fe.Error(), wantField+": ")
	}
}
