package handlers

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/snapexec/snapexec/api"
)

// TestMethodNotAllowedSaysAllow sends every path of the contract, and the
// routes it does not list, a method it lacks: the 405 carries an Allow header
// with exactly the path's methods (RFC 9110 15.5.6).
func TestMethodNotAllowedSaysAllow(t *testing.T) {
	contract, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	want := map[string][]string{ // path: its methods, in Allow's order
		"/":           {"GET", "HEAD"},
		"/ui/app.js":  {"GET", "HEAD"},
		"/ui/nope.js": {"GET", "HEAD"},
	}
	for path, item := range contract.Paths.Map() {
		for m := range item.Operations() {
			p := param.ReplaceAllString(path, "p1")
			want[p] = append(want[p], m)
		}
	}
	h := newRouterWith(t, okExecutor(), RouterOptions{
		Metrics:   http.NotFoundHandler(),
		Dashboard: func(notFound http.Handler) http.Handler { return notFound },
	})
	for path, allowed := range want {
		slices.SortFunc(allowed, func(a, b string) int { return slices.Index(methods, a) - slices.Index(methods, b) })
		for _, m := range methods {
			if slices.Contains(allowed, m) || m == http.MethodConnect {
				continue // CONNECT's target is a host, not a path
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, localRequest(m, path, strings.NewReader("")))
			if got := rec.Header().Get("Allow"); rec.Code != http.StatusMethodNotAllowed || got != strings.Join(allowed, ", ") {
				t.Errorf("%s %s = %d Allow %q, want 405 Allow %q", m, path, rec.Code, got, strings.Join(allowed, ", "))
			}
		}
	}
}
