package handlers

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// isUpload reports whether r uploads a file: its body streams to disk, so
// that its size is bounded by Security.MaxUploadBytes and its time by its
// pace (boundBody), not by the limits of a body held in memory.
func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPut && r.URL.Path == "/files/content"
}

// hasBody reports whether r carries a body still to be read.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// boundBody bounds what a request body can hold on to. It must arrive within
// timeout of the request's headers: a read deadline on this request's
// connection, which net/http lifts itself once the body has been read (when it
// starts watching the connection for the client going away), so that a long
// answer (an event stream, a long poll, a long command) outlives it. An
// upload's deadline moves with every read instead: a 200 MB file on a slow
// link is fine, a pause of timeout is not. And an
// answer given before the body was read to its end closes the connection:
// net/http would otherwise read up to 256 KiB of it after the handler, for as
// long as the client trickles it, to reuse the connection.
func boundBody(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hasBody(r) {
				next.ServeHTTP(w, r)
				return
			}
			if timeout > 0 {
				// A writer without a connection (a test's recorder) has
				// nothing to bound.
				rc := http.NewResponseController(w)
				_ = rc.SetReadDeadline(time.Now().Add(timeout))
				if isUpload(r) {
					r.Body = &pacedBody{ReadCloser: r.Body, rc: rc, timeout: timeout}
					// For an upload read past net/http (takeUpload).
					r = r.WithContext(context.WithValue(r.Context(), uploadPaceKey{}, timeout))
				}
			}
			w.Header().Set("Connection", "close")
			r.Body = &keepAliveAtEOF{ReadCloser: r.Body, header: w.Header()}
			next.ServeHTTP(w, r)
		})
	}
}

// uploadPaceKey holds an upload's pace, the time each of its reads may take.
type uploadPaceKey struct{}

// uploadPace is r's upload pace; 0 is none.
func uploadPace(r *http.Request) time.Duration {
	d, _ := r.Context().Value(uploadPaceKey{}).(time.Duration)
	return d
}

// pacedBody gives every read of a body timeout to arrive.
type pacedBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
}

func (b *pacedBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	return b.ReadCloser.Read(p)
}

// keepAliveAtEOF lets the connection live on (drops "Connection: close" from
// the answer's header) once its body has been read to the end.
type keepAliveAtEOF struct {
	io.ReadCloser
	header http.Header
}

func (b *keepAliveAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.header.Del("Connection")
	}
	return n, err
}

// refuseEncodedBody refuses, before any of it is read, a body with a content
// coding (415 on Content-Encoding; "identity" is none) and one whose
// Content-Type is given twice (400). The server decodes no coding (RFC 9110,
// 8.4.1: it answers 415 rather than take the coded bytes for the content), so
// that a gzip upload's compressed bytes would otherwise become the file; and
// two types are two readings of one body, as a JSON member named twice is.
func refuseEncodedBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasBody(r) {
			next.ServeHTTP(w, r)
			return
		}
		for _, v := range r.Header.Values("Content-Encoding") {
			for c := range strings.SplitSeq(v, ",") {
				if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
					writeProblem(w, r, &problem{status: http.StatusUnsupportedMediaType, code: UnsupportedMediaType, field: "Content-Encoding",
						detail: "the server decodes no content coding: send the body as it is, without Content-Encoding"})
					return
				}
			}
		}
		if len(r.Header.Values("Content-Type")) > 1 {
			writeProblem(w, r, invalid("Content-Type", "Content-Type is given more than once: give it once"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
