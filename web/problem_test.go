package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/snapexec/snapexec/internal/testserver"
)

// answer is one response of the real server, its problem decoded.
type answer struct {
	status  int
	header  http.Header
	problem map[string]any
}

func send(t *testing.T, s *testserver.Server, method, path string) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.problem); err != nil {
			t.Fatalf("%s %s = %d with a body that is not JSON: %q", method, path, resp.StatusCode, raw)
		}
	}
	return a
}

// TestDashboardProblemsAreTheAPIs: what the dashboard's routes refuse is
// the same problem+json as what the API refuses, field for field but the
// request id, which is the answer's own: a client reads one shape.
func TestDashboardProblemsAreTheAPIs(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	tests := []struct {
		name      string
		dashboard [2]string // method, path handled by the dashboard's routes
		api       [2]string // the API's answer of the same kind
		status    int
	}{
		{"not found", [2]string{http.MethodGet, "/ui/nope.js"}, [2]string{http.MethodGet, "/nope"}, http.StatusNotFound},
		{"not found under /ui", [2]string{http.MethodGet, "/ui/"}, [2]string{http.MethodGet, "/processes/x/nope"}, http.StatusNotFound},
		{"method not allowed", [2]string{http.MethodPost, "/ui/app.js"}, [2]string{http.MethodPost, "/stats"}, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dash := send(t, s, tt.dashboard[0], tt.dashboard[1])
			api := send(t, s, tt.api[0], tt.api[1])
			for _, a := range []struct {
				what string
				answer
			}{{tt.dashboard[0] + " " + tt.dashboard[1], dash}, {tt.api[0] + " " + tt.api[1], api}} {
				if a.status != tt.status {
					t.Errorf("%s = %d, want %d", a.what, a.status, tt.status)
				}
				for k, want := range map[string]string{"Content-Type": "application/problem+json", "Cache-Control": "no-store"} {
					if got := a.header.Get(k); got != want {
						t.Errorf("%s %s = %q, want %q", a.what, k, got, want)
					}
				}
				if id := a.problem["requestId"]; id == "" || id != a.header.Get("X-Request-Id") {
					t.Errorf("%s requestId = %v, X-Request-Id %q: want them equal and set", a.what, id, a.header.Get("X-Request-Id"))
				}
			}
			delete(dash.problem, "requestId")
			delete(api.problem, "requestId")
			if !equalJSON(dash.problem, api.problem) {
				t.Errorf("the dashboard's problem differs from the API's:\n%s %s: %v\n%s %s: %v",
					tt.dashboard[0], tt.dashboard[1], dash.problem, tt.api[0], tt.api[1], api.problem)
			}
		})
	}
}

func equalJSON(a, b map[string]any) bool {
	ja, _ := json.Marshal(a) // maps marshal with sorted keys
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
