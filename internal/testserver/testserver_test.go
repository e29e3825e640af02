package testserver

import (
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestStart(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		wantToken bool
	}{
		{name: "token by default", opts: Options{}, wantToken: true},
		{name: "no token", opts: Options{NoToken: true}},
		{name: "flags and env", opts: Options{Args: []string{"--grace", "500ms"}, Env: []string{"SNAPEXEC_LOG_LEVEL=debug"}}, wantToken: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, tt.opts)
			if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
				t.Errorf("URL = %q, want http://127.0.0.1:PORT", s.URL)
			}
			if got := s.Token != ""; got != tt.wantToken {
				t.Errorf("Token set = %v, want %v", got, tt.wantToken)
			}
			wantBare := http.StatusOK
			if tt.wantToken {
				wantBare = http.StatusUnauthorized
			}
			if got := get(t, s.URL+"/stats", ""); got != wantBare {
				t.Errorf("GET /stats without a token = %d, want %d", got, wantBare)
			}
			if got := get(t, s.URL+"/stats", s.Token); got != http.StatusOK {
				t.Errorf("GET /stats with the token = %d, want 200", got)
			}
			if err := s.Stop(); err != nil {
				t.Errorf("Stop() = %v, want nil", err)
			}
			if log := s.Log(); !strings.Contains(log, listenPrefix) || !strings.Contains(log, `"stopped"`) {
				t.Errorf("Log() lacks the listening line or the stop; log:\n%s", log)
			}
			if s.Token != "" && strings.Contains(s.Log(), s.Token) {
				t.Errorf("the server logged its token")
			}
		})
	}
}

func TestLaunchReportsABadStart(t *testing.T) {
	_, err := Launch(Options{Args: []string{"--no-such-flag"}})
	if err == nil {
		t.Fatal("Launch(--no-such-flag) = nil error, want one")
	}
	if !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("Launch(--no-such-flag) = %v, want the server's own complaint in it", err)
	}
}
