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

// execStream is /exec's streamed answer: output events as they come, then
// one exit event. A client that goes away gets the process group terminated.
type execStream struct {
	ctx context.Context
	p   *exec.Process
}

// VisitExecResponse writes the stream.
func (e execStream) VisitExecResponse(w http.ResponseWriter) error {
	err := streamEvents(e.ctx, w, e.p, 0, func() any {
		res := execResult(service.ExecOutput{ProcessID: e.p.ID(), Pid: e.p.Pid(), Result: e.p.Result(), Snapshot: service.Receipt(e.p)})
		res.Stdout, res.Stderr, res.StdoutBase64, res.StderrBase64 = nil, nil, nil, nil
		return res
	})
	if err != nil {
		e.p.Terminate(exec.StatusTerminated)
	}
	return nil
}

// processEvents serves GET /processes/{processId}/events.
func (s *Server) processEvents(w http.ResponseWriter, r *http.Request) {
	p, err := s.procs.Process(chi.URLParam(r, "processId"))
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	var after int64
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if after, err = strconv.ParseInt(id, 10, 64); err != nil || after < 0 {
			writeProblem(w, r, invalid("Last-Event-ID", "Last-Event-ID must be a seq"))
			return
		}
	}
	// A resume point that was evicted (410) or never sent (400) is refused
	// before the stream starts.
	switch _, err := p.Read(r.Context(), after, 1, 0); {
	case errors.Is(err, exec.ErrSeqAhead):
		writeProblem(w, r, invalid("Last-Event-ID", "Last-Event-ID is beyond the last event of this process: resume from an id the stream sent"))
		return
	case errors.Is(err, exec.ErrOutputLost):
		writeProblem(w, r, err)
		return
	}
	_ = streamEvents(r.Context(), w, p, after, func() any { return processView(p) })
}

// streamEvents writes p's chunks after seq `after` as SSE events (id = seq),
// then an exit event with final()'s data once the output is complete. It
// returns ctx's error if the client went away first.
func streamEvents(ctx context.Context, w http.ResponseWriter, p *exec.Process, after int64, final func() any) error {
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
		r, err := p.Read(ctx, after, 0, heartbeat)
		switch {
		case errors.Is(err, exec.ErrOutputLost):
			// A slow reader fell behind the ring: say so, and go on from
			// what is still there.
			fmt.Fprintf(w, "event: lost\ndata: {\"nextSeq\":%d}\n\n", r.NextSeq)
			after = r.NextSeq - 1
			continue
		case err != nil:
			return err
		}
		for _, c := range r.Chunks {
			data, _ := json.Marshal(chunkView(c))
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", c.Seq, c.Stream, data)
			after = c.Seq
		}
		if r.Closed {
			data, _ := json.Marshal(final())
			fmt.Fprintf(w, "event: exit\ndata: %s\n\n", data)
			flush()
			return nil
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
