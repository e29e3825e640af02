package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAcceptNegotiation: /exec streams only when the client prefers
// text/event-stream to JSON by its Accept header's media ranges and q-values,
// not whenever the header mentions it.
func TestAcceptNegotiation(t *testing.T) {
	tests := []struct {
		name   string
		accept []string
		want   bool
	}{
		{"no Accept", nil, false},
		{"event stream", []string{"text/event-stream"}, true},
		{"event stream with a parameter", []string{"text/event-stream; charset=utf-8"}, true},
		{"JSON", []string{"application/json"}, false},
		{"event stream in another charset", []string{"text/event-stream; charset=latin1"}, false},
		{"anything", []string{"*/*"}, false},
		{"refused by q=0", []string{"text/event-stream;q=0, application/json"}, false},
		{"refused by q=0 alone", []string{"text/event-stream;q=0"}, false},
		{"JSON preferred by q", []string{"text/event-stream;q=0.5, application/json"}, false},
		{"stream preferred by q", []string{"application/json;q=0.5, text/event-stream"}, true},
		{"any text", []string{"text/*"}, true},
		{"specific range wins over its wildcard", []string{"text/*;q=1, text/event-stream;q=0, */*;q=0.1"}, false},
		{"JSON ruled out by a range", []string{"application/*;q=0, text/event-stream"}, true},
		{"over two header lines", []string{"application/json;q=0.1", "text/event-stream"}, true},
		{"dashboard", []string{"application/json, application/problem+json"}, false},
		{"malformed", []string{"text/event-stream;;q=x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bool
			h := withEventStream(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = wantsEventStream(r.Context()) }))
			req := httptest.NewRequest("POST", "/exec", nil)
			for _, a := range tt.accept {
				req.Header.Add("Accept", a)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got != tt.want {
				t.Errorf("Accept %q streams = %v, want %v", tt.accept, got, tt.want)
			}
		})
	}
}
