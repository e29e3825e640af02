package handlers

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Security is the server's defences against callers that should not run
// commands: a bearer token, and the Host and Origin checks that stop DNS
// rebinding and cross-site requests from a web page the user happens to visit.
// Each check is its own middleware, and none of them reads a request body: a
// refused request is answered from its headers alone.
type Security struct {
	// Token, when non-empty, is required as "Authorization: Bearer <token>" on
	// every route but /healthz, /readyz and the dashboard's static files.
	Token string
	// AllowedHosts are the host names (without port) accepted in Host besides
	// the loopback names; "*" accepts any.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body; zero means no bound.
	MaxBodyBytes int64
	// MaxUploadBytes bounds the body of a file upload (isUpload) instead,
	// which streams to disk rather than into memory; zero means no bound.
	MaxUploadBytes int64
}

// middlewares are the checks in the order they run: the cheapest refusals
// first, and the body's bound only for a request that passed them all.
func (sec Security) middlewares() []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{sec.checkHost, checkOrigin, sec.requireToken, sec.limitBody}
}

// publicPaths need no token: probes, and the dashboard's static files, which
// hold no data (every call the page makes carries the token).
func publicPath(r *http.Request) bool {
	p := r.URL.Path
	return p == "/healthz" || p == "/readyz" || (r.Method == http.MethodGet && (p == "/" || strings.HasPrefix(p, "/ui/")))
}

// checkHost refuses a Host that is neither a loopback name nor an allowed one:
// a page that rebinds its own DNS name to 127.0.0.1 still sends that name.
func (sec Security) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sec.hostAllowed(r.Host) {
			writeProblem(w, r, &problem{status: http.StatusMisdirectedRequest, code: MisdirectedHost, field: "Host",
				detail: "this server does not answer to that Host; use a loopback name or one given with --allowed-hosts"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin refuses a request a browser sent on behalf of another site.
func checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
			writeProblem(w, r, &problem{status: http.StatusForbidden, code: ForbiddenOrigin, field: "Origin",
				detail: "cross-origin requests are refused"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireToken refuses a request without the token, unless its path is
// public. A request that passes vouches for its connection (see ConnLimit):
// with a token, only the token does; without one, every caller is a client.
func (sec Security) requireToken(next http.Handler) http.Handler {
	token := []byte(sec.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(token) > 0 && publicPath(r) {
			next.ServeHTTP(w, r)
			return
		}
		if len(token) > 0 {
			got, ok := bearer(r.Header.Get("Authorization"))
			if !ok {
				got, ok = protocolToken(r)
			}
			if !ok || subtle.ConstantTimeCompare([]byte(got), token) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="snapexec"`)
				writeProblem(w, r, &problem{status: http.StatusUnauthorized, code: Unauthorized,
					detail: "send the server's token as: Authorization: Bearer <token>"})
				return
			}
		}
		vouchForConn(r.Context())
		next.ServeHTTP(w, r)
	})
}

// bearer returns the token of an Authorization value "Bearer TOKEN": the
// scheme in any case and one or more spaces after it (RFC 9110, 11.1).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}

// protocolToken returns the token a WebSocket upgrade offers as the
// subprotocol snapexec.bearer.<base64url of the token, unpadded>, which a
// browser can send where it cannot send Authorization. It is encoded
// because a subprotocol is an HTTP token: the '/' and '=' of a base64 token
// would make the browser refuse it. The answer names only snapexec.v1
// (attach.go), so the token is never echoed, and it is never in the URL.
func protocolToken(r *http.Request) (string, bool) {
	// Only the attach route's upgrade: no other request needs it.
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/attach") || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return "", false
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if enc, ok := strings.CutPrefix(strings.TrimSpace(p), bearerProtocol); ok {
				t, err := base64.RawURLEncoding.DecodeString(enc)
				return string(t), err == nil
			}
		}
	}
	return "", false
}

// limitBody refuses a body whose declared length is beyond MaxBodyBytes (an
// upload's beyond MaxUploadBytes) before reading any of it, and makes a
// longer undeclared one fail its read.
func (sec Security) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := sec.MaxBodyBytes
		if isUpload(r) {
			limit = sec.MaxUploadBytes
		}
		if limit > 0 && hasBody(r) {
			if r.ContentLength > limit {
				writeProblem(w, r, bodyTooLarge(limit))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next.ServeHTTP(w, r)
	})
}

func bodyTooLarge(limit int64) *problem {
	return &problem{status: http.StatusRequestEntityTooLarge, code: BodyTooLarge,
		detail: "the request body is larger than the server's limit of " + strconv.FormatInt(limit, 10) + " bytes"}
}

// bodyReadProblem is the problem of a body that could not be read whole: too
// large (limitBody), or too slow (boundBody); nil for any other error.
func bodyReadProblem(err error) *problem {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return bodyTooLarge(mbe.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &problem{status: http.StatusRequestTimeout, code: BodyTimeout, cause: err,
			detail: "the request body did not arrive within the server's --body-timeout"}
	}
	return nil
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
