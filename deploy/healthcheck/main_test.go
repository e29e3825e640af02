package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestProbe(t *testing.T) {
	var status atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
		_, _ = io.WriteString(w, `{"status":"Server available"}`)
	}))
	defer srv.Close()

	tests := []struct {
		name   string
		status int
		args   []string
		want   int
	}{
		{"healthy", http.StatusOK, []string{"healthcheck", srv.URL}, 0},
		{"unavailable", http.StatusServiceUnavailable, []string{"healthcheck", srv.URL}, 1},
		{"redirect is not healthy", http.StatusFound, []string{"healthcheck", srv.URL}, 1},
		{"nothing listening", http.StatusOK, []string{"healthcheck", "http://127.0.0.1:1/"}, 1},
		{"no URL", http.StatusOK, []string{"healthcheck"}, 2},
		{"bad URL", http.StatusOK, []string{"healthcheck", "://"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status.Store(int64(tt.status))
			var stderr strings.Builder
			if got := probe(tt.args, &stderr); got != tt.want {
				t.Errorf("probe(%q) = %d, want %d; stderr %q", tt.args, got, tt.want, stderr.String())
			}
			if tt.want != 0 && stderr.Len() == 0 {
				t.Errorf("probe(%q) failed without saying why", tt.args)
			}
		})
	}
}
