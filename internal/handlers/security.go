package handlers

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Security is the server's defences against callers that should not run
// commands: a bearer token, and the Host and Origin checks that stop DNS
// rebinding and cross-site requests from a web page the user happens to visit.
type Security struct {
	// Token, when non-empty, is required as "Authorization: Bearer <token>" on
	// every route but /healthz, /readyz and the dashboard's static files.
	Token string
	// AllowedHosts are the host names (without port) accepted in Host besides
	// the loopback names; "*" accepts any.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body; zero means no bound.
	MaxBodyBytes int64
}

// publicPaths need no token: probes, and the dashboard's static files, which
// hold no data (every call the page makes carries the token).
func publicPath(r *http.Request) bool {
	p := r.URL.Path
	return p == "/healthz" || p == "/readyz" || (r.Method == http.MethodGet && (p == "/" || strings.HasPrefix(p, "/ui/")))
}

func (sec Security) middleware(next http.Handler) http.Handler {
	token := []byte(sec.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sec.hostAllowed(r.Host) {
			writeProblem(w, r, &problem{status: http.StatusMisdirectedRequest, code: MisdirectedHost, field: "Host",
				detail: "this server does not answer to that Host; use a loopback name or one given with --allowed-hosts"})
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
			writeProblem(w, r, &problem{status: http.StatusForbidden, code: ForbiddenOrigin, field: "Origin",
				detail: "cross-origin requests are refused"})
			return
		}
		if len(token) > 0 && !publicPath(r) {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), token) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="snapexec"`)
				writeProblem(w, r, &problem{status: http.StatusUnauthorized, code: Unauthorized,
					detail: "send the server's token as: Authorization: Bearer <token>"})
				return
			}
		}
		if sec.MaxBodyBytes > 0 && r.Body != nil && r.Body != http.NoBody {
			if r.ContentLength > sec.MaxBodyBytes {
				writeProblem(w, r, bodyTooLarge(sec.MaxBodyBytes))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, sec.MaxBodyBytes)
		}
		if r.Body != nil && r.Body != http.NoBody {
			// JSON decoders turn invalid UTF-8 into U+FFFD silently: a name
			// or argv would then not be what the client sent. Refuse instead.
			body, err := io.ReadAll(r.Body)
			if limit, ok := isBodyTooLarge(err); ok {
				writeProblem(w, r, bodyTooLarge(limit))
				return
			}
			if err != nil {
				writeProblem(w, r, &problem{status: http.StatusBadRequest, code: InvalidRequest, detail: "the request body could not be read", cause: err})
				return
			}
			if !utf8.Valid(body) {
				writeProblem(w, r, &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "body", detail: "the request body is not valid UTF-8"})
				return
			}
			// A JSON decoder stops after the first value; "{...} junk" would pass.
			if isJSON(r) && len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
				writeProblem(w, r, &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "body", detail: "the request body is not one valid JSON value"})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

func bodyTooLarge(limit int64) *problem {
	return &problem{status: http.StatusRequestEntityTooLarge, code: BodyTooLarge,
		detail: "the request body is larger than the server's limit of " + strconv.FormatInt(limit, 10) + " bytes"}
}

// isBodyTooLarge reports whether err came from reading past MaxBodyBytes.
func isBodyTooLarge(err error) (int64, bool) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return mbe.Limit, true
	}
	return 0, false
}

func isJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/json"
}

// hostAllowed accepts loopback names and the configured ones.
func (sec Security) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if IsLoopbackHost(host) {
		return true
	}
	for _, allowed := range sec.AllowedHosts {
		if allowed == "*" || strings.EqualFold(allowed, host) {
			return true
		}
	}
	return false
}

// IsLoopbackHost reports whether host (a name or an address, without port)
// names this machine's loopback interface.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether origin is the server's own: the scheme and the
// Host the request was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(origin, scheme+"://"+r.Host)
}
