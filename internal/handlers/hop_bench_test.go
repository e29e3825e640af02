package handlers

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkExecHop measures what the handler chain costs one POST /exec
// before the executor runs: request id, access log, the checks, the contract
// validator, decoding and translation. The executor is a fake that answers at
// once, so the figure is the server's own hop (issue 17), without the network
// or a spawn.
func BenchmarkExecHop(b *testing.B) {
	env := map[string]string{}
	for i := range 20 {
		env["VAR_"+strings.Repeat("X", i)] = strings.Repeat("v", 40)
	}
	bodies := []struct {
		name string
		body map[string]any
	}{
		{"true", map[string]any{"argv": []string{"/bin/true"}}},
		{"typical", map[string]any{
			"argv": []string{"/bin/bash", "-lc", "git status --short && make -j4 test"}, "cwd": "/tmp",
			"env": env, "envPolicy": map[string]any{"inherit": "core", "set": map[string]string{"TERM": "dumb"}},
			"shellSnapshot": map[string]any{"scopeId": "workspace-1", "shell": map[string]string{"name": "bash", "path": "/bin/bash"}},
			"timeoutMs":     60000,
		}},
		{"stdin-1MiB", map[string]any{"argv": []string{"cat"}, "stdin": strings.Repeat("0123456789abcdef", 1<<16)}},
	}
	h := newTestRouter(b, okExecutor(), io.Discard)
	for _, bb := range bodies {
		body, err := json.Marshal(bb.body)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				req := localRequest(http.MethodPost, "/exec", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("POST /exec = %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
