package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// limits are small enough for a row to cross each of them.
var limits = Limits{MaxTimeout: time.Minute, MaxArgs: 4, MaxArgBytes: 64, MaxEnv: 3, MaxEnvBytes: 64, MaxStdinBytes: 8, MaxOutputBytes: 1024}

// fieldOf returns the field err names, or "" when err is not a field error.
func fieldOf(err error) string {
	var fe *FieldError
	var pe *envpolicy.FieldError
	switch {
	case errors.As(err, &fe):
		if fe.Reason == "" {
			return "(no reason)"
		}
		return fe.Field
	case errors.As(err, &pe):
		return pe.Field
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// TestExecInputValidate: each check the contract cannot express, on the
// field the API names, the first failing field in request order, and never a
// value in the reason. The rows are those the handlers and cmd/server's
// TestMalformedRequests checked over HTTP before validation moved here.
func TestExecInputValidate(t *testing.T) {
	ok := func(change func(*ExecInput)) ExecInput {
		in := ExecInput{Argv: []string{"true"}}
		change(&in)
		return in
	}
	tests := []struct {
		name string
		in   ExecInput
		want string // the field; "" means valid
	}{
		{"plain", ok(func(*ExecInput) {}), ""},
		{"everything within the limits", ok(func(in *ExecInput) {
			in.Argv = []string{"/bin/sh", "-c", "true"}
			in.Cwd = ptr("/tmp")
			in.Env = map[string]string{"A": "1", "B": "2", "C": "3"}
			in.EnvPolicy = &envpolicy.Policy{Inherit: envpolicy.InheritCore, Set: map[string]string{"D": "4"}, Exclude: []string{"X*"}}
			in.Stdin = []byte("12345678")
			in.Timeout, in.IdleTimeout, in.MaxOutputBytes = time.Minute, time.Minute, 1024
		}), ""},
		{"no output kept", ok(func(in *ExecInput) { in.MaxOutputBytes = exec.KeepNoOutput }), ""},
		{"a terminal", ok(func(in *ExecInput) { in.TTY, in.Arg0 = &exec.TTYSize{Cols: 1000, Rows: 1}, "-sh" }), ""},
		{"a terminal 1001 wide", ok(func(in *ExecInput) { in.TTY = &exec.TTYSize{Cols: 1001, Rows: 24} }), "tty"},
		{"a terminal of no rows", ok(func(in *ExecInput) { in.TTY = &exec.TTYSize{Cols: 80} }), "tty"},
		{"arg0 with a NUL", ok(func(in *ExecInput) { in.Arg0 = "a\x00b" }), "arg0"},
		{"empty argv", ok(func(in *ExecInput) { in.Argv = nil }), "argv"},
		{"empty program", ok(func(in *ExecInput) { in.Argv = []string{""} }), "argv[0]"},
		{"too many arguments", ok(func(in *ExecInput) { in.Argv = []string{"a", "b", "c", "d", "e"} }), "argv"},
		{"arguments too large", ok(func(in *ExecInput) { in.Argv = []string{"echo", strings.Repeat("x", 64)} }), "argv"},
		{"NUL in argv", ok(func(in *ExecInput) { in.Argv = []string{"echo", "a\x00b"} }), "argv[1]"},
		{"relative cwd", ok(func(in *ExecInput) { in.Cwd = ptr("tmp") }), "cwd"},
		{"empty cwd", ok(func(in *ExecInput) { in.Cwd = ptr("") }), "cwd"},
		{"NUL in cwd", ok(func(in *ExecInput) { in.Cwd = ptr("/tmp\x00x") }), "cwd"},
		{"env name with =", ok(func(in *ExecInput) { in.Env = map[string]string{"A=B": "1"} }), `env["A=B"]`},
		{"env name with NUL", ok(func(in *ExecInput) { in.Env = map[string]string{"A\x00B": "1"} }), `env["A\x00B"]`},
		{"env empty name", ok(func(in *ExecInput) { in.Env = map[string]string{"": "1"} }), `env[""]`},
		{"env value with NUL", ok(func(in *ExecInput) { in.Env = map[string]string{"A": "1\x00secret-value"} }), `env["A"]`},
		{"too many variables", ok(func(in *ExecInput) { in.Env = map[string]string{"A": "", "B": "", "C": "", "D": ""} }), "env"},
		{"env too large", ok(func(in *ExecInput) { in.Env = map[string]string{"A": strings.Repeat("v", 64)} }), "env"},
		{"policy inherit unknown", ok(func(in *ExecInput) { in.EnvPolicy = &envpolicy.Policy{Inherit: "sometimes"} }), "envPolicy.inherit"},
		{"policy exclude with NUL", ok(func(in *ExecInput) { in.EnvPolicy = &envpolicy.Policy{Exclude: []string{"A\x00"}} }), "envPolicy.exclude[0]"},
		{"policy set name with =", ok(func(in *ExecInput) { in.EnvPolicy = &envpolicy.Policy{Set: map[string]string{"A=B": "x"}} }), `envPolicy.set["A=B"]`},
		{"policy set value with NUL", ok(func(in *ExecInput) {
			in.EnvPolicy = &envpolicy.Policy{Set: map[string]string{"A": "x\x00secret-value"}}
		}), `envPolicy.set["A"]`},
		{"policy set too large", ok(func(in *ExecInput) {
			in.EnvPolicy = &envpolicy.Policy{Set: map[string]string{"A": strings.Repeat("v", 64)}}
		}), "envPolicy.set"},
		{"too many patterns", ok(func(in *ExecInput) {
			in.EnvPolicy = &envpolicy.Policy{Exclude: []string{"A", "B"}, IncludeOnly: []string{"C", "D"}}
		}), "envPolicy"},
		{"stdin too large", ok(func(in *ExecInput) { in.Stdin = []byte("123456789") }), "stdin"},
		{"idle timeout above the maximum", ok(func(in *ExecInput) { in.IdleTimeout = time.Minute + time.Millisecond }), "idleTimeoutMs"},
		{"output bound above the maximum", ok(func(in *ExecInput) { in.MaxOutputBytes = 1025 }), "maxOutputBytes"},
		{"timeout above the maximum", ok(func(in *ExecInput) { in.Timeout = time.Minute + time.Millisecond }), "timeoutMs"},
		{"first field first", ok(func(in *ExecInput) {
			in.Cwd = ptr("tmp")
			in.Env = map[string]string{"A=B": "1"}
			in.Timeout = time.Hour
		}), "cwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate(limits)
			if got := fieldOf(err); got != tt.want || (tt.want == "" && err != nil) {
				t.Errorf("Validate() = %v (field %q), want field %q", err, got, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret-value") {
				t.Errorf("Validate() = %v quotes the value", err)
			}
		})
	}
	if err := (ExecInput{Argv: []string{"true"}, Timeout: time.Hour}).Validate(Limits{}); err != nil {
		t.Errorf("Validate() with zero limits = %v, want nil: a zero limit bounds nothing", err)
	}
}

func TestPrewarmInputValidate(t *testing.T) {
	tests := []struct {
		name string
		in   PrewarmInput
		want string
	}{
		{"plain", PrewarmInput{ScopeID: "s"}, ""},
		{"absolute cwd", PrewarmInput{Cwd: ptr("/nonexistent")}, ""}, // whether it exists is exec.CheckDir's
		{"relative cwd", PrewarmInput{Cwd: ptr("home")}, "cwd"},
		{"empty cwd", PrewarmInput{Cwd: ptr("")}, "cwd"},
		{"NUL in cwd", PrewarmInput{Cwd: ptr("/a\x00")}, "cwd"},
		{"env name with =", PrewarmInput{Env: map[string]string{"A=B": "1"}}, `env["A=B"]`},
		{"too many variables", PrewarmInput{Env: map[string]string{"A": "", "B": "", "C": "", "D": ""}}, "env"},
		{"policy set value with NUL", PrewarmInput{EnvPolicy: &envpolicy.Policy{Set: map[string]string{"A": "\x00"}}}, `envPolicy.set["A"]`},
		{"too many patterns", PrewarmInput{EnvPolicy: &envpolicy.Policy{IncludeOnly: []string{"A", "B", "C", "D"}}}, "envPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate(limits)
			if got := fieldOf(err); got != tt.want || (tt.want == "" && err != nil) {
				t.Errorf("Validate() = %v (field %q), want field %q", err, got, tt.want)
			}
		})
	}
}

func TestStdinInputValidate(t *testing.T) {
	if err := (StdinInput{Data: []byte("12345678")}).Validate(limits); err != nil {
		t.Errorf("a write at the limit: Validate() = %v, want nil", err)
	}
	if err := (StdinInput{Data: []byte("123456789")}).Validate(limits); fieldOf(err) != "data" {
		t.Errorf("a write beyond the limit: Validate() = %v, want a field error on data", err)
	}
}

// TestArgumentsFitOneExec: Linux refuses an argument or an environment
// string of 128 KiB or more (E2BIG), which would read as a program that
// cannot start; such a request is a field error before anything runs, on
// a server whose byte limits would allow it. A session's script must leave
// room for the line its command adds.
func TestArgumentsFitOneExec(t *testing.T) {
	long := strings.Repeat("x", maxArgLen)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"the longest argument", ExecInput{Argv: []string{"echo", long}}.Validate(Limits{}), ""},
		{"one byte more", ExecInput{Argv: []string{"echo", long + "x"}}.Validate(Limits{}), "argv[1]"},
		{"the longest variable", ExecInput{Argv: []string{"true"}, Env: map[string]string{"V": long[:maxArgLen-2]}}.Validate(Limits{}), ""},
		{"a variable one byte more", ExecInput{Argv: []string{"true"}, Env: map[string]string{"V": long[:maxArgLen-1]}}.Validate(Limits{}), "env"},
		{"a session's longest script", SessionExecInput{Script: long[:shellsnap.MaxSessionScript]}.Validate(Limits{}), ""},
		{"a session's script one byte more", SessionExecInput{Script: long[:shellsnap.MaxSessionScript+1]}.Validate(Limits{}), "script"},
	}
	for _, tt := range tests {
		if got := fieldOf(tt.err); got != tt.want {
			t.Errorf("%s: Validate = %v (field %q), want field %q", tt.name, tt.err, got, tt.want)
		}
	}
}
