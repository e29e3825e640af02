package handlers

// Promises of api/openapi.yaml that no schema check can see, held against
// the router: which operations need the token.

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/snapexec/snapexec/api"
)

// TestContractSecurity checks that the operations the contract marks public
// (security: []) answer without the token and that every other one answers
// 401, so a generated client sends the token exactly where it is needed
// (moved from cmd/server: the router decides it, with every route the
// server has, /metrics and the dashboard among them).
func TestContractSecurity(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	scheme := doc.Components.SecuritySchemes["bearerAuth"]
	if scheme == nil || scheme.Value.Type != "http" || scheme.Value.Scheme != "bearer" {
		t.Fatalf("components.securitySchemes.bearerAuth = %+v, want an http bearer scheme", scheme)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Fatalf("global security = %v, want bearerAuth", doc.Security)
	}
	f := &fakeService{} // no call may reach it
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	h := newRouterWith(t, f, RouterOptions{Security: Security{Token: testToken}, Metrics: ok, Dashboard: func(http.Handler) http.Handler { return ok }})
	params := strings.NewReplacer("{processId}", "p-none", "{scopeId}", "none")
	var public []string
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			name := method + " " + path
			open := op.Security != nil && len(*op.Security) == 0
			if open {
				public = append(public, name)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, localRequest(method, params.Replace(path), nil))
			switch {
			case open && rec.Code == http.StatusUnauthorized:
				t.Errorf("%s without the token = 401, but the contract marks it public", name)
			case !open && (rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"unauthorized"`) || rec.Header().Get("WWW-Authenticate") == ""):
				t.Errorf("%s without the token = %d %s, want 401 unauthorized with WWW-Authenticate", name, rec.Code, rec.Body)
			}
		}
	}
	slices.Sort(public)
	if want := []string{"GET /healthz", "GET /readyz"}; !slices.Equal(public, want) {
		t.Errorf("public operations = %v, want %v", public, want)
	}
	if calls := f.called(); len(calls) != 0 {
		t.Errorf("requests without the token reached the service: %q", calls)
	}
}
