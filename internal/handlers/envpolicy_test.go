package handlers

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/service"
)

// TestEnvPolicyProblems: a malformed envPolicy is refused with the field
// that is wrong, whether the contract (a type, an enum, an unknown field) or
// the service's Validate (a name no process can be given) refuses it (moved
// from cmd/server's TestExecEnvPolicyProblems; the policies' effect on a
// child is the service's TestExecEnvPolicy).
func TestEnvPolicyProblems(t *testing.T) {
	tests := []struct {
		name      string
		policy    string
		wantField string
	}{
		{"unknown inherit", `{"inherit":"some"}`, "envPolicy.inherit"},
		{"set name with =", `{"set":{"A=B":"1"}}`, `envPolicy.set["A=B"]`},
		{"set value with NUL", `{"set":{"A":"x\u0000y"}}`, `envPolicy.set["A"]`},
		{"unknown field", `{"inherits":"all"}`, "envPolicy.inherits"},
		{"exclude not a list", `{"exclude":"A"}`, "envPolicy.exclude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, okExecutor(), "POST", "/exec", `{"argv":["true"],"envPolicy":`+tt.policy+`}`, nil)
			if err := jsonHas(rec.Body.Bytes(), `{"code":"invalid_request","field":`+jsonText(tt.wantField)+`}`); rec.Code != http.StatusBadRequest || err != nil {
				t.Errorf("envPolicy %s = %d %s (%v), want 400 invalid_request %s", tt.policy, rec.Code, rec.Body, err, tt.wantField)
			}
		})
	}
}

// TestWriteStdinEndsWithItsClient: a stdin write waits with its request's
// context, so that a client that gives up ends the write (the HTTP half of
// cmd/server's TestStdinRetryAfterACutWrite; the service's test of the same
// name shows the retry that follows).
func TestWriteStdinEndsWithItsClient(t *testing.T) {
	ended := make(chan error, 1)
	f := &fakeService{WriteStdinFn: func(ctx context.Context, _ string, _ service.StdinInput) (service.StdinOutput, error) {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
		}
		ended <- ctx.Err()
		return service.StdinOutput{}, ctx.Err()
	}}
	srv := serveRouter(t, newTestRouter(t, f, io.Discard), nil)
	impatient := &http.Client{Timeout: 200 * time.Millisecond}
	if resp, err := impatient.Post(srv.URL+"/processes/p-1/stdin", "application/json", strings.NewReader(`{"data":"x"}`)); err == nil {
		resp.Body.Close()
		t.Fatalf("a write that never ends answered %d, want the client to give up", resp.StatusCode)
	}
	if err := <-ended; err == nil {
		t.Errorf("the write's context did not end when its client gave up")
	}
}
