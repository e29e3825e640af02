package envpolicy

import (
	"maps"
	"testing"
)

func TestIsNeverInherited(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN", true},
		{"NODE_REPL_AUTH_TOKEN", true},
		{"OPENAI_FEDERATION_RULE_ID", true},
		{"OPENAI_IDENTITY_TOKEN_FILE", true},
		{"OPENAI_WORKLOAD_IDENTITY_CONTEXT", true},
		{"CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE", true},
		{"SNAPEXEC_TOKEN", true},
		{"SNAPEXEC_TOKEN_FILE", true},
		{"snapexec_token", true},
		{"Node_Repl_Auth_Token", true},
		{"SNAPEXEC_TOKENS", false},
		{"SNAPEXEC_TOKEN_", false},
		{"SNAPEXEC", false},
		{"X_SNAPEXEC_TOKEN", false},
		{" SNAPEXEC_TOKEN", false},
		{"NODE_REPL_AUTH", false},
		{"OPENAI_IDENTITY_TOKEN", false},
		{"\u017fNAPEXEC_TOKEN", false}, // long s folds to S only under Unicode rules
		{"", false},
		{"PATH", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsNeverInherited(tt.name); got != tt.want {
				t.Errorf("IsNeverInherited(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestDropNeverInherited(t *testing.T) {
	vars := map[string]string{
		"PATH":                "/bin",
		"SNAPEXEC_TOKEN":      "t",
		"snapexec_token_file": "/run/token",
		"SNAPEXEC_TOKENS":     "kept",
	}
	DropNeverInherited(vars)
	want := map[string]string{"PATH": "/bin", "SNAPEXEC_TOKENS": "kept"}
	if !maps.Equal(vars, want) {
		t.Errorf("DropNeverInherited left %v, want %v", vars, want)
	}
}
