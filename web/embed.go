// Package web is the status dashboard of snapexec: static files embedded in
// the binary and served by Handler. The server mounts GET / and GET /ui/* to
// it; everything the page loads comes from here, and the API it polls is the
// server's own, same origin.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed static
var static embed.FS

// contentTypes are set explicitly: the system MIME table is not trusted, and
// with nosniff a wrong type breaks the page.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// CSP allows only the server's own scripts, styles and connections; no inline
// script or style, no frames, no plugins.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

type asset struct {
	body        []byte
	etag        string
	contentType string
}

type handler struct {
	assets   map[string]asset // by URL path: "/" and "/ui/<name>"
	notFound http.Handler
}

// loadAssets reads every embedded file, with its type and ETag (a hash of
// the content), once per Handler: the files cannot change while the binary
// runs.
func loadAssets() map[string]asset {
	assets := map[string]asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		a := asset{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, contentType: ct}
		rel := strings.TrimPrefix(p, "static/")
		if rel == "index.html" {
			assets["/"] = a
		}
		assets["/ui/"+rel] = a
		return nil
	})
	if err != nil {
		panic("web: reading embedded files: " + err.Error()) // the files are compiled in: cannot happen
	}
	return assets
}

// Handler serves static/index.html at / and every other file of static/ at
// /ui/<path> (index.html too). Responses carry an explicit Content-Type,
// nosniff, the CSP, Cache-Control: no-cache and a strong ETag computed once;
// a matching If-None-Match answers 304. Any other path is notFound's to
// answer: the server passes its own, so that the dashboard refuses in the
// API's problem+json, and this package writes none. Mount it for GET and HEAD
// of / and /ui/* only (the router answers other methods, with an Allow
// header read from its routes); it reads the full r.URL.Path, so mount it
// without stripping a prefix.
func Handler(notFound http.Handler) http.Handler {
	return &handler{assets: loadAssets(), notFound: notFound}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	a, ok := h.assets[r.URL.Path]
	if !ok {
		h.notFound.ServeHTTP(w, r)
		return
	}
	hdr.Set("Content-Security-Policy", CSP)
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

// etagMatches implements If-None-Match's weak comparison over a list of tags
// or "*".
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
