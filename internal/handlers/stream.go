package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/elnormous/contenttype"
	"github.com/go-chi/chi/v5"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
)

// heartbeat keeps idle event streams alive through proxies.
const heartbeat = 15 * time.Second

type wantsStreamKey struct{}

// withEventStream notes on the context whether the client prefers
// text/event-stream to JSON, which the strict handlers cannot see otherwise.
// Accept is negotiated by its media ranges, their precedence and q-values
// (RFC 9110, 12.5.1): "text/event-stream;q=0, application/json" is JSON, and
// "*/*" is JSON, the first offer. JSON is also the answer to an Accept that
// does not parse or accepts neither: the RFC lets a server disregard it
// rather than answer 406.
func withEventStream(next http.Handler) http.Handler {
	// Both answers are UTF-8, so that a range asking for that charset matches.
	offers := []contenttype.MediaType{
		contenttype.NewMediaType("application/json; charset=utf-8"),
		contenttype.NewMediaType("text/event-stream; charset=utf-8"),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept := strings.Join(r.Header.Values("Accept"), ",")
		if mt, _, err := contenttype.GetAcceptableMediaTypeFromHeader(accept, offers); accept != "" && err == nil && mt.Subtype == "event-stream" {
			r = r.WithContext(context.WithValue(r.Context(), wantsStreamKey{}, true))
		}
		next.ServeHTTP(w, r)
	})
}

func wantsEventStream(ctx context.Context) bool {
	v, _ := ctx.Value(wantsStreamKey{}).(bool)
	return v
}

// execEvents starts an /exec command and answers with its events; a
// command that never ran has its exit event alone.
func (s *Server) execEvents(ctx context.Context, in service.ExecInput) (ExecResponseObject, error) {
	f, err := s.exec.StartExec(ctx, in)
	var nr *service.NotRunError
	if errors.As(err, &nr) {
		return execNotRun(execResult(nr.Output())), nil
	}
	if err != nil {
		return nil, err
	}
	return execStream{ctx: ctx, f: f}, nil
}

// execStream is /exec's streamed answer: output events as they come, then
// one exit event. A client that goes away gets the process group terminated.
// It holds the process itself (service.Follower), not its id, which a new
// process may take once the table has forgotten this one.
type execStream struct {
	ctx context.Context
	f   service.Follower
}

// VisitExecResponse writes the stream.
func (e execStream) VisitExecResponse(w http.ResponseWriter) error {
	defer e.f.Close()
	err := streamEvents(e.ctx, w, e.f, 0, func() (any, error) {
		out, err := e.f.Result(e.ctx)
		res := execResult(out)
		res.Stdout, res.Stderr, res.StdoutBase64, res.StderrBase64 = nil, nil, nil, nil
		return res, err
	})
	if err != nil {
		e.f.Terminate()
	}
	return nil
}

// processEvents serves GET /processes/{processId}/events. A resume point
// that was evicted (410) or never sent (400) is refused before the stream
// starts, and an unknown process (404) before a malformed Last-Event-ID. The
// stream follows the process it started with (service.Follower), whatever
// its id names later.
func (s *Server) processEvents(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "processId")
	after, badID := lastEventID(r)
	f, err := s.procs.Follow(id, after)
	if f != nil {
		defer f.Close()
	}
	switch {
	case errors.Is(err, service.ErrNotFound):
		writeProblem(w, r, err)
	case badID != nil:
		writeProblem(w, r, badID)
	case errors.Is(err, exec.ErrSeqAhead):
		writeProblem(w, r, invalid("Last-Event-ID", "Last-Event-ID is beyond the last event of this process: resume from an id the stream sent"))
	case errors.Is(err, exec.ErrOutputLost):
		writeProblem(w, r, renameField(err, func(string) string { return "Last-Event-ID" }))
	case err != nil:
		writeProblem(w, r, err)
	default:
		_ = streamEvents(r.Context(), w, f, after, func() (any, error) {
			return processView(f.Info()), nil
		})
	}
}

// lastEventID is the seq a client resumes after: its Last-Event-ID, or 0.
func lastEventID(r *http.Request) (int64, error) {
	id := r.Header.Get("Last-Event-ID")
	if id == "" {
		return 0, nil
	}
	after, err := strconv.ParseInt(id, 10, 64)
	if err != nil || after < 0 {
		return 0, invalid("Last-Event-ID", "Last-Event-ID must be a seq")
	}
	return after, nil
}

// streamEvents writes f's chunks (from seq `after` on, where f starts) as
// SSE events (id = seq), then an exit event with final()'s data once the
// output is complete. It returns ctx's error if the client went away first,
// and the error of a read or of final() that failed.
func streamEvents(ctx context.Context, w http.ResponseWriter, f service.Follower, after int64, final func() (any, error)) error {
	flusher, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	for {
		r, err := f.Next(ctx, heartbeat)
		switch {
		case errors.Is(err, exec.ErrOutputLost):
			// A slow reader fell behind the ring: say so, and go on from
			// what is still there (f does).
			fmt.Fprintf(w, "event: lost\ndata: {\"nextSeq\":%d}\n\n", r.NextSeq)
			after = r.NextSeq - 1
			continue
		case err != nil:
			return err
		}
		if len(r.Chunks) > 0 && r.Chunks[0].Seq > after+1 {
			// A stream from the start of a process whose first chunks
			// were evicted: say what it cannot send.
			fmt.Fprintf(w, "event: lost\ndata: {\"nextSeq\":%d}\n\n", r.Chunks[0].Seq)
		}
		for _, c := range r.Chunks {
			data, _ := json.Marshal(chunkView(c))
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", c.Seq, c.Stream, data)
			after = c.Seq
		}
		if r.Closed {
			return writeExit(w, final)
		}
		if len(r.Chunks) == 0 {
			fmt.Fprint(w, ": keepalive\n\n")
		}
		flush()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// writeExit writes the exit event with final()'s data, and flushes it.
func writeExit(w http.ResponseWriter, final func() (any, error)) error {
	v, err := final()
	if err != nil {
		return err
	}
	data, _ := json.Marshal(v)
	fmt.Fprintf(w, "event: exit\ndata: %s\n\n", data)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
