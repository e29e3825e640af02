package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/felixge/httpsnoop"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

// Log field names, kept in one place so that every line agrees.
const (
	logRequestID = "requestId"
	logMethod    = "method"
	logRoute     = "route"
	logStatus    = "status"
	logDuration  = "durationMs"
	logBytes     = "bytes"
	logTraceID   = "traceId"
)

type requestIDKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID takes X-Request-Id from the request when it is sane, else makes
// one; it echoes it on the response and puts it on the context and the logger.
func withRequestID(base zerolog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if !saneRequestID(id) {
				var b [12]byte
				_, _ = rand.Read(b[:])
				id = hex.EncodeToString(b[:])
			}
			w.Header().Set("X-Request-Id", id)
			lc := base.With().Str(logRequestID, id)
			// Every line of the request carries its trace id (otelhttp, outside
			// the router, has started the span or continued a traceparent).
			if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
				lc = lc.Str(logTraceID, sc.TraceID().String())
			}
			logger := lc.Logger()
			ctx := context.WithValue(r.Context(), requestIDKey{}, id)
			next.ServeHTTP(w, r.WithContext(logger.WithContext(ctx)))
		})
	}
}

// saneRequestID accepts ids a log can carry safely: 1 to 128 printable ASCII
// characters without spaces or quotes.
func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// accessLog writes one line per request: id, method, route template (never the
// raw path, which may carry scope ids), status, duration and size. httpsnoop
// keeps the writer's optional interfaces, http.Flusher among them.
func accessLog(counts *httpCounters) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			logRequest(counts, next, w, r)
		})
	}
}

func logRequest(counts *httpCounters, next http.Handler, w http.ResponseWriter, r *http.Request) {
	m := httpsnoop.CaptureMetrics(next, w, r)
	counts.requests.Add(1)
	if m.Code >= 500 {
		counts.errors.Add(1)
	}
	zerolog.Ctx(r.Context()).Info().
		Str(logMethod, r.Method).
		Str(logRoute, routeOf(r)).
		Int(logStatus, m.Code).
		Float64(logDuration, float64(m.Duration)/float64(time.Millisecond)).
		Int64(logBytes, m.Written).
		Msg("request")
}

// refuseDotSegmentIDs answers 400 for a route whose id in the path
// (processId, sessionId, scopeId) is "." or "..", escaped or not: a URL's
// dot segments, which clients and proxies remove from a path (RFC 3986,
// 5.2.4), so that no such id can be addressed, and a request that names one
// must reach nothing, least of all what the path means once they are
// removed. It runs once chi has matched the route, which names the ids.
func refuseDotSegmentIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc := chi.RouteContext(r.Context()); rc != nil {
			for i, name := range rc.URLParams.Keys {
				v := rc.URLParams.Values[i]
				if u, err := url.PathUnescape(v); err == nil {
					v = u
				}
				if v == "." || v == ".." {
					writeProblem(w, r, invalidf(name, `%s may not be "." or "..": a URL's dot segment, which clients and proxies remove from a path`, name))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuseUnknownQuery answers 400 for a query parameter that contract does
// not list for the operation chi matched: a parameter misspelled
// (afterseq) would be ignored, and the client answered as if it had not
// asked. And for one given more than once (no parameter of the contract
// is a list): two readings of one request, as a JSON member named twice
// is, where a proxy that checked the last path would let the first be
// written. It names the parameter, never its value.
func refuseUnknownQuery(contract *openapi3.T) func(http.Handler) http.Handler {
	known := map[string]map[string]bool{} // "GET /route/{template}" → its query parameters
	for path, item := range contract.Paths.Map() {
		for method, op := range item.Operations() {
			names := map[string]bool{}
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
					names[p.Value.Name] = true
				}
			}
			known[method+" "+path] = names
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if names, ok := known[r.Method+" "+routeOf(r)]; ok {
				query := r.URL.Query()
				for _, name := range slices.Sorted(maps.Keys(query)) {
					switch {
					case !names[name]:
						writeProblem(w, r, invalidf(name, "the operation takes no query parameter %s", short(name)))
						return
					case len(query[name]) > 1:
						writeProblem(w, r, invalidf(name, "the query parameter %s is given more than once: give it once", short(name)))
						return
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// recoverer turns a panic in a handler into a 500 problem and a log line.
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				zerolog.Ctx(r.Context()).Error().Interface("panic", v).Msg("handler panicked")
				writeProblem(w, r, &problem{status: http.StatusInternalServerError, code: Internal, detail: "internal error; see the server log for this request id"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}
