package main

import (
	"net/http"
	"sort"
	"strings"
	"testing"
)

// TestExecEnvPolicy runs `env` under several policies and checks the exact
// names the child sees.
func TestExecEnvPolicy(t *testing.T) {
	t.Setenv("SNAPX_PLAIN", "plain")
	t.Setenv("SNAPX_API_KEY", "k")
	t.Setenv("SNAPX_DENIED", "d")
	t.Setenv("SNAPEXEC_TOKEN", "server-secret")
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("HOME", "/home/snapx")
	s := startServer(t, nil)

	tests := []struct {
		name   string
		policy map[string]any // nil: no envPolicy
		env    map[string]string
		want   string // sorted NAME=VALUE lines
	}{
		{"no policy is exactly env", nil, map[string]string{"A": "1"}, "A=1"},
		{"no policy drops never-inherited names", nil, map[string]string{"A": "1", "SNAPEXEC_TOKEN": "x"}, "A=1"},
		{"inherit none", map[string]any{"inherit": "none"}, map[string]string{"A": "1"}, "A=1"},
		{"inherit all filtered", map[string]any{
			"exclude":     []string{"snapx_denied"},
			"includeOnly": []string{"SNAPX_*"},
			"set":         map[string]string{"SNAPX_SET": "s", "SNAPX_PLAIN": "overridden"},
		}, map[string]string{"SNAPX_PLAIN": "request-wins"}, "SNAPX_PLAIN=request-wins\nSNAPX_SET=s"},
		{"inherit core", map[string]any{"inherit": "core", "includeOnly": []string{"PATH", "HOME", "SNAPX_*"}}, nil, "HOME=/home/snapx\nPATH=/usr/bin:/bin"},
		{"server secret never inherited", map[string]any{
			"ignoreDefaultExcludes": true,
			"includeOnly":           []string{"SNAPEXEC_*", "SNAPX_*"},
		}, nil, "SNAPX_API_KEY=k\nSNAPX_DENIED=d\nSNAPX_PLAIN=plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"argv": []string{"/usr/bin/env"}}
			if tt.policy != nil {
				body["envPolicy"] = tt.policy
			}
			if tt.env != nil {
				body["env"] = tt.env
			}
			code, got, _ := s.post(t, "/exec", body)
			if code != http.StatusOK {
				t.Fatalf("POST /exec %v = %d %v", body, code, got)
			}
			lines := strings.Split(strings.TrimSpace(got["stdout"].(string)), "\n")
			sort.Strings(lines)
			if g := strings.Join(lines, "\n"); g != tt.want {
				t.Errorf("env under %v =\n%s\nwant\n%s", tt.policy, g, tt.want)
			}
		})
	}
}

func TestExecEnvPolicyProblems(t *testing.T) {
	s := startServer(t, nil)
	tests := []struct {
		name      string
		policy    map[string]any
		wantField string
	}{
		{"unknown inherit", map[string]any{"inherit": "some"}, "envPolicy.inherit"},
		{"set name with =", map[string]any{"set": map[string]string{"A=B": "1"}}, `envPolicy.set["A=B"]`},
		{"set value with NUL", map[string]any{"set": map[string]string{"A": "x\x00y"}}, `envPolicy.set["A"]`},
		{"unknown field", map[string]any{"inherits": "all"}, "envPolicy"},
		{"exclude not a list", map[string]any{"exclude": "A"}, "envPolicy.exclude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"true"}, "envPolicy": tt.policy})
			if code != http.StatusBadRequest || got["code"] != "invalid_request" || got["field"] != tt.wantField {
				t.Errorf("envPolicy %v = %d %v field %v, want 400 invalid_request %s", tt.policy, code, got["code"], got["field"], tt.wantField)
			}
		})
	}
}
