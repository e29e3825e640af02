package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-chi/chi/v5"
	validator "github.com/oapi-codegen/nethttp-middleware"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
)

// RouterOptions are the parts of the surface that are not generated.
type RouterOptions struct {
	// MeterProvider receives otelhttp's HTTP server metrics; nil means none.
	MeterProvider metric.MeterProvider
	// TracerProvider and Propagator make a span of each request, continuing
	// an incoming traceparent; nil means no spans.
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	// Metrics serves GET /metrics; nil means no such route.
	Metrics http.Handler
	// Dashboard makes the handler of GET and HEAD of / and its assets under
	// /ui/ (nil means none), given the router's own 404 answer: its problems
	// are the API's. Other methods get the router's 405.
	Dashboard func(notFound http.Handler) http.Handler
	// Security holds the token, Host, Origin and body-size defences.
	Security Security
	// BodyTimeout is how long a request body may take to arrive after the
	// request's headers; zero means no bound.
	BodyTimeout time.Duration
}

// unrouted labels the requests that reached no route: those refused before
// routing (421, 403, 401, 413) and those with no route (404, 405). One label
// for all of them, so that what a client makes up never becomes a label.
const unrouted = "unrouted"

// NewRouter returns the whole HTTP surface of snapexec: every route is here.
func NewRouter(s *Server, logger zerolog.Logger, opts RouterOptions) (http.Handler, error) {
	contract, err := openapi3.NewLoader().LoadFromData(s.spec)
	if err != nil {
		return nil, fmt.Errorf("load contract: %w", err)
	}
	contract.Servers = nil // any host may serve it; the Host check is the server's own
	// The token is the server's own check too (requireToken, before any body
	// is read): without the contract's security requirements the validator
	// skips a pass over them per request that could only call a no-op.
	contract.Security = nil
	for _, item := range contract.Paths.Map() {
		for _, op := range item.Operations() {
			op.Security = nil
		}
	}

	// kin-openapi keeps its body decoders in a process-wide registry; this
	// one replaces its JSON decoder with one that also makes the checks the
	// contract cannot state. Registering it again is harmless.
	openapi3filter.RegisterBodyDecoder("application/json", decodeJSONBody)

	r := chi.NewRouter()
	r.Use(withRequestID(logger), accessLog(&s.http), routeLabel, recoverer, boundBody(opts.BodyTimeout))
	r.Use(opts.Security.middlewares()...)
	r.Use(refuseEncodedBody, withEventStream)
	// The contract validator runs per operation, after chi has matched the
	// route, so that 404 and 405 stay chi's and every log line has its route.
	validate := validator.OapiRequestValidatorWithOptions(contract, &validator.Options{
		ErrorHandlerWithOpts: func(_ context.Context, err error, w http.ResponseWriter, r *http.Request, _ validator.ErrorHandlerOpts) {
			validationError(w, r, err)
		},
	})
	strict := NewStrictHandlerWithOptions(s, nil, StrictHTTPServerOptions{
		RequestErrorHandlerFunc:  requestDecodeError,
		ResponseErrorHandlerFunc: writeProblem,
	})
	// Of the operations' middlewares the last is the outermost: the ids in
	// the path are checked first, then the query's names, then the rest.
	unknownQuery := refuseUnknownQuery(contract)
	HandlerWithOptions(withAttach{ServerInterface: strict, s: s}, ChiServerOptions{
		BaseRouter:       r,
		Middlewares:      []MiddlewareFunc{validate, unknownQuery, refuseDotSegmentIDs},
		ErrorHandlerFunc: parameterError,
	})
	r.With(refuseDotSegmentIDs, unknownQuery).Get("/processes/{processId}/events", s.processEvents)
	r.With(unknownQuery).Get("/files/content", s.readFile)
	r.With(unknownQuery).Put("/files/content", s.writeFile)
	if opts.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", opts.Metrics)
	}
	notAllowed := methodNotAllowed(r)
	if opts.Dashboard != nil {
		dashboard := opts.Dashboard(http.HandlerFunc(notFound))
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r.Method(m, "/", dashboard)
			r.Method(m, "/ui/*", dashboard)
		}
	}
	r.NotFound(notFound)
	r.MethodNotAllowed(notAllowed)
	mp := opts.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = nooptrace.NewTracerProvider()
	}
	prop := opts.Propagator
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	return otelhttp.NewHandler(r, "snapexec",
		otelhttp.WithMeterProvider(mp),
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(prop),
		// Renamed to "METHOD /route/{template}" once chi has matched (routeLabel).
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	), nil
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, &problem{status: http.StatusNotFound, code: NotFound, detail: "no such path"})
}

// methods are the methods a 405's Allow header may list, in its order.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}

// methodNotAllowed answers 405 with the Allow header RFC 9110 requires,
// listing the methods the route table has for the path, so that the header
// cannot drift from the routes.
func methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.RawPath // what chi routes by
		if path == "" {
			path = r.URL.Path
		}
		var allowed []string
		for _, m := range methods {
			if routes.Match(chi.NewRouteContext(), m, path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeProblem(w, r, &problem{status: http.StatusMethodNotAllowed, code: MethodNotAllowed, detail: r.Method + " is not allowed here"})
	}
}

// routeLabel labels otelhttp's metrics and names its span with the route
// template chi matched, never the raw path; a request that reached no route
// is labelled unrouted.
func routeLabel(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		route := routeOf(r)
		if l, ok := otelhttp.LabelerFromContext(r.Context()); ok {
			l.Add(semconv.HTTPRoute(route))
		}
		if route == unrouted {
			return // the span keeps the method alone for a name
		}
		span := trace.SpanFromContext(r.Context())
		span.SetName(r.Method + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route))
	})
}

// routeOf is the route template chi matched for r, or unrouted.
func routeOf(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return unrouted
}
