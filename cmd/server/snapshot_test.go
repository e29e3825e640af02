package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func snapshotBody(home, script, scope, shellName, shellPath string) map[string]any {
	return map[string]any{
		"argv":          []string{shellPath, "-lc", script},
		"cwd":           home,
		"env":           map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"},
		"shellSnapshot": map[string]any{"scopeId": scope, "shell": map[string]string{"name": shellName, "path": shellPath}},
	}
}

func TestExecWithShellSnapshot(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	profile := "export FROM_PROFILE=yes\ngreet() { echo \"hello $1\"; }\n"
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	body := snapshotBody(home, "greet world; echo $FROM_PROFILE", "scope-1", "bash", "/bin/bash")
	for i, wantState := range []string{"on_demand", "cache_hit"} {
		code, got, _ := s.post(t, "/exec", body)
		if code != http.StatusOK {
			t.Fatalf("POST /exec = %d %v", code, got)
		}
		receipt, _ := got["snapshot"].(map[string]any)
		if receipt["outcome"] != "used" || receipt["state"] != wantState {
			t.Errorf("run %d receipt = %v, want used %s", i, receipt, wantState)
		}
		if got["stdout"] != "hello world\nyes\n" {
			t.Errorf("run %d stdout = %q, want the profile's function and export", i, got["stdout"])
		}
	}

	// A failing profile still runs the command, as the plain login shell.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, ".bashrc"), []byte("exit 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, got, _ := s.post(t, "/exec", snapshotBody(bad, "echo ran", "scope-2", "bash", "/bin/bash"))
	receipt, _ := got["snapshot"].(map[string]any)
	if code != http.StatusOK || got["stdout"] != "ran\n" || receipt["outcome"] != "fallback" || !strings.Contains(receipt["reason"].(string), "exit status: 7") {
		t.Errorf("failing profile = %d %v %v, want 200, ran, fallback with the reason", code, got["stdout"], receipt)
	}

	// Not requested, and ineligible.
	_, got, _ = s.post(t, "/exec", map[string]any{"argv": []string{"true"}})
	if r := got["snapshot"].(map[string]any); r["outcome"] != "not_requested" {
		t.Errorf("no shellSnapshot receipt = %v, want not_requested", r)
	}
	ineligible := snapshotBody(home, "true", "scope-1", "bash", "/bin/bash")
	ineligible["argv"] = []string{"/bin/bash", "-c", "true"}
	_, got, _ = s.post(t, "/exec", ineligible)
	if r := got["snapshot"].(map[string]any); r["outcome"] != "ineligible" || r["reason"] == nil {
		t.Errorf("-c receipt = %v, want ineligible with a reason", r)
	}
}

func TestExecShellSnapshotProblems(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	// The shell name is checked before the argv shape (issue 14), unlike
	// the reference, which lets this one fall back silently.
	fishWithAnotherArgv := snapshotBody(home, "true", "s", "fish", "/usr/bin/fish")
	fishWithAnotherArgv["argv"] = []string{"/usr/bin/fish", "-c", "true"}
	tests := []struct {
		name      string
		body      map[string]any
		wantCode  string
		wantField string
	}{
		{"empty scope", snapshotBody(home, "true", "", "bash", "/bin/bash"), "invalid_scope", "shellSnapshot.scopeId"},
		{"long scope", snapshotBody(home, "true", strings.Repeat("s", 257), "bash", "/bin/bash"), "invalid_scope", "shellSnapshot.scopeId"},
		{"fish", snapshotBody(home, "true", "s", "fish", "/bin/bash"), "unsupported_shell", "shellSnapshot.shell.name"},
		{"fish whatever the argv", fishWithAnotherArgv, "unsupported_shell", "shellSnapshot.shell.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got, _ := s.post(t, "/exec", tt.body)
			if code != http.StatusUnprocessableEntity || got["code"] != tt.wantCode || got["field"] != tt.wantField {
				t.Errorf("POST /exec = %d %v %v, want 422 %s %s", code, got["code"], got["field"], tt.wantCode, tt.wantField)
			}
		})
	}
}
