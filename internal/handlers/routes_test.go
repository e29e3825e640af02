package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/snapexec/snapexec/api"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
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

// TestDotSegmentIDs: an id that is a URL's dot segment, "." or "..", which
// clients and proxies remove from a path (RFC 3986, 5.2.4) so that it could
// never be addressed, is 400 on its field wherever it comes, escaped or not,
// and reaches no service call: not in a path (so that nothing is done to a
// process, session or scope of that name), and not as a new id in a body,
// a scope's included.
func TestDotSegmentIDs(t *testing.T) {
	none := func() *fakeService { return &fakeService{} }
	var tests []handlerCase
	for _, tt := range []struct{ method, target, body, field string }{
		{"GET", "/processes/..", "", "processId"},
		{"GET", "/processes/.", "", "processId"},
		{"GET", "/processes/%2E%2E", "", "processId"},
		{"GET", "/processes/%2e", "", "processId"},
		{"DELETE", "/processes/..", "", "processId"},
		{"POST", "/processes/../stdin", `{"data":"x"}`, "processId"},
		{"POST", "/processes/%2E/signal", `{"signal":"SIGTERM"}`, "processId"},
		{"GET", "/processes/../output", "", "processId"},
		{"GET", "/processes/../events", "", "processId"},
		{"GET", "/processes/%2E%2E/attach", "", "processId"},
		{"GET", "/sessions/..", "", "sessionId"},
		{"DELETE", "/sessions/.", "", "sessionId"},
		{"POST", "/sessions/%2E%2E/exec", `{"script":"true"}`, "sessionId"},
		{"POST", "/sessions/../fork", "", "sessionId"},
		{"GET", "/snapshots/..", "", "scopeId"},
		{"DELETE", "/snapshots/%2E", "", "scopeId"},
		{"POST", "/snapshots/../prewarm", `{"shell":{"name":"bash","path":"/bin/bash"}}`, "scopeId"},
		{"POST", "/exec", `{"processId":"..","argv":["true"]}`, "processId"},
		{"POST", "/processes", `{"processId":".","argv":["true"]}`, "processId"},
		{"POST", "/sessions", `{"sessionId":"..","shell":{"name":"bash","path":"/bin/bash"}}`, "sessionId"},
		{"POST", "/sessions/s1/fork", `{"sessionId":"."}`, "sessionId"},
		// A scope made under such an id could not be read or forgotten.
		{"POST", "/exec", `{"argv":["/bin/bash","-lc","true"],"shellSnapshot":{"scopeId":"..","shell":{"name":"bash","path":"/bin/bash"}}}`, "shellSnapshot.scopeId"},
		{"POST", "/processes", `{"argv":["/bin/bash","-lc","true"],"shellSnapshot":{"scopeId":".","shell":{"name":"bash","path":"/bin/bash"}}}`, "shellSnapshot.scopeId"},
		{"POST", "/sessions", `{"shell":{"name":"bash","path":"/bin/bash"},"shellSnapshot":{"scopeId":".."}}`, "shellSnapshot.scopeId"},
	} {
		detail := tt.field + ` may not be \".\" or \"..\": a URL's dot segment, which clients and proxies remove from a path`
		if inPath := strings.Contains(tt.target, ".") || strings.Contains(strings.ToUpper(tt.target), "%2E"); !inPath {
			detail = `the value may not be \".\" or \"..\"`
		}
		tests = append(tests, handlerCase{
			name: tt.method + " " + tt.target + " " + tt.body, method: tt.method, target: tt.target, body: tt.body,
			svc: none, status: http.StatusBadRequest, want: `{"code":"invalid_request","field":"` + tt.field + `","detail":"` + detail + `"}`,
		})
	}
	runHandlerCases(t, tests)
}

// TestUnknownQueryParameters: a query parameter the contract does not list
// for the operation is 400 on its name, before anything is done: a
// misspelled one (afterseq) would otherwise be ignored, and the client
// answered as if it had not asked. The routes served by hand are checked as
// the generated ones are.
func TestUnknownQueryParameters(t *testing.T) {
	none := func() *fakeService { return &fakeService{} }
	var tests []handlerCase
	for _, tt := range []struct{ method, target, body, field string }{
		{"GET", "/processes/p-1?bogus=1", "", "bogus"},
		{"GET", "/processes/p-1/output?afterseq=3", "", "afterseq"},
		{"GET", "/processes/p-1/output?afterSeq=3&waitms=10", "", "waitms"},
		{"POST", "/exec?timeoutMs=5", `{"argv":["true"]}`, "timeoutMs"},
		{"GET", "/processes/p-1/events?afterSeq=2", "", "afterSeq"},
		{"GET", "/processes/p-1/attach?seqs=true&after=2", "", "after"},
		{"GET", "/files/content?path=/r/f&offset=2", "", "offset"},
		{"PUT", "/files/content?path=/r/f&mode=0755", "x", "mode"},
	} {
		tests = append(tests, handlerCase{
			name: tt.method + " " + tt.target, method: tt.method, target: tt.target, body: tt.body, svc: none,
			status: http.StatusBadRequest, want: `{"code":"invalid_request","field":"` + tt.field + `","detail":"the operation takes no query parameter ` + tt.field + `"}`,
		})
	}
	// A parameter given twice is two readings of one request (a proxy that
	// checked one path, a server that wrote the other): refused on its name
	// on every route, before anything is read or written. The generated
	// wrapper's binding refuses it first on the routes it serves; the
	// routes served by hand say why.
	for _, tt := range []struct{ method, target, body, field string }{
		{"GET", "/files/content?path=/r/f&path=/etc/passwd", "", "path"},
		{"PUT", "/files/content?path=/r/f&path=/r/g", "x", "path"},
		{"GET", "/files/stat?path=/r/f&path=/r/g", "", "path"},
		{"GET", "/processes/p-1/output?afterSeq=1&afterSeq=2", "", "afterSeq"},
		{"GET", "/processes/p-1/output?waitMs=0&waitMs=0", "", "waitMs"},
		{"GET", "/processes/p-1/attach?seqs=true&seqs=false", "", "seqs"},
	} {
		want := `{"code":"invalid_request","field":"` + tt.field + `"}`
		if strings.HasPrefix(tt.target, "/files/content") {
			want = `{"code":"invalid_request","field":"` + tt.field + `","detail":"the query parameter ` + tt.field + ` is given more than once: give it once"}`
		}
		tests = append(tests, handlerCase{
			name: tt.method + " " + tt.target, method: tt.method, target: tt.target, body: tt.body, svc: none,
			status: http.StatusBadRequest, want: want,
		})
	}
	// The parameters it lists pass.
	read := func() *fakeService {
		return &fakeService{ReadFn: func(context.Context, string, service.ReadInput) (exec.ReadResult, error) {
			return exec.ReadResult{NextSeq: 1}, nil
		}}
	}
	tests = append(tests, handlerCase{name: "listed", method: "GET", target: "/processes/p-1/output?afterSeq=0&maxBytes=10&waitMs=0",
		svc: read, status: http.StatusOK, calls: []string{"Read p-1"}})
	runHandlerCases(t, tests)
}
