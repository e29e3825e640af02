package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// The server's own 404 answer, as the router hands it to Handler; a test
// tells it by its body.
const routerNotFound = "the router's 404"

func newHandler() http.Handler {
	answer := func(status int, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		})
	}
	return Handler(answer(http.StatusNotFound, routerNotFound))
}

func TestHandlerServesFiles(t *testing.T) {
	h := newHandler()
	tests := []struct {
		path, wantType, wantBody string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/ui/app.js">`},
		{"/ui/app.js", "text/javascript; charset=utf-8", "POLL_MS"},
		{"/ui/style.css", "text/css; charset=utf-8", "prefers-color-scheme"},
		{"/ui/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp := get(t, h, http.MethodGet, tt.path, nil)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d, want 200", tt.path, resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tt.wantType {
				t.Errorf("GET %s Content-Type = %q, want %q", tt.path, ct, tt.wantType)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("GET %s body lacks %q", tt.path, tt.wantBody)
			}
			for k, want := range map[string]string{
				"X-Content-Type-Options":  "nosniff",
				"Cache-Control":           "no-cache",
				"Content-Security-Policy": CSP,
			} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("GET %s %s = %q, want %q", tt.path, k, got, want)
				}
			}
			if etag := resp.Header.Get("ETag"); !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
				t.Errorf("GET %s ETag = %q, want a quoted strong tag", tt.path, etag)
			}
		})
	}
}

func TestHandlerCSPIsStrict(t *testing.T) {
	for _, part := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(CSP, part) {
			t.Errorf("CSP %q lacks %q", CSP, part)
		}
	}
	if strings.Contains(CSP, "unsafe") || strings.Contains(CSP, "http:") || strings.Contains(CSP, "https:") {
		t.Errorf("CSP %q allows inline code or other origins", CSP)
	}
}

// TestIndexLoadsNothingExternal: the page refers only to its own /ui/ files,
// and holds no inline script or style (the CSP would block them).
func TestIndexLoadsNothingExternal(t *testing.T) {
	body, err := static.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	html := string(body)
	for _, bad := range []string{"http://", "https://", "//cdn", "<style", " style=", "onclick=", "onload=", "javascript:"} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}
	if strings.Count(html, "<script") != 1 || !strings.Contains(html, `<script type="module" src="/ui/app.js"></script>`) {
		t.Errorf("index.html must load exactly one script, /ui/app.js, and nothing inline")
	}
	for _, f := range []string{"static/app.js", "static/style.css"} {
		b, _ := static.ReadFile(f)
		for _, bad := range []string{"http://", "https://", "@import", "url(", "innerHTML", "eval("} {
			if strings.Contains(string(b), bad) && !(bad == "http://" && strings.Contains(string(b), "http://www.w3.org/2000/svg")) {
				t.Errorf("%s contains %q", f, bad)
			}
		}
	}
}

func TestHandlerETag(t *testing.T) {
	h := newHandler()
	first := get(t, h, http.MethodGet, "/ui/app.js", nil)
	etag := first.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if again := get(t, newHandler(), http.MethodGet, "/ui/app.js", nil).Header.Get("ETag"); again != etag {
		t.Errorf("ETag changed between handlers: %q then %q", etag, again)
	}
	if other := get(t, h, http.MethodGet, "/ui/style.css", nil).Header.Get("ETag"); other == etag {
		t.Errorf("app.js and style.css share the ETag %q", etag)
	}
	for _, inm := range []string{etag, "W/" + etag, `"nope", ` + etag, "*"} {
		resp := get(t, h, http.MethodGet, "/ui/app.js", map[string]string{"If-None-Match": inm})
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("If-None-Match %s = %d with %d bytes, want 304 and no body", inm, resp.StatusCode, len(body))
		}
		if resp.Header.Get("ETag") != etag {
			t.Errorf("304 ETag = %q, want %q", resp.Header.Get("ETag"), etag)
		}
	}
	resp := get(t, h, http.MethodGet, "/ui/app.js", map[string]string{"If-None-Match": `"stale"`})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("stale If-None-Match = %d, want 200", resp.StatusCode)
	}
}

// TestHandlerNotFoundAndMethods: a path without a file is the router's 404,
// a method other than GET and HEAD the router's 405 (the shape of those
// problems is TestDashboardProblemsAreTheAPIs's, against the real server).
func TestHandlerNotFoundAndMethods(t *testing.T) {
	h := newHandler()
	for _, p := range []string{"/ui/", "/ui/nope.js", "/ui/../embed.go", "/ui/static/app.js", "/index.html", "/static/app.js", "/ui"} {
		resp := get(t, h, http.MethodGet, p, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotFound || string(body) != routerNotFound {
			t.Errorf("GET %s = %d %q, want 404 %q", p, resp.StatusCode, body, routerNotFound)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s lacks nosniff", p)
		}
	}
	resp := get(t, h, http.MethodHead, "/ui/style.css", nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD = %d with %d bytes, Content-Length %q; want 200, empty, a length", resp.StatusCode, len(body), resp.Header.Get("Content-Length"))
	}
}
