package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"strconv"

	sse "github.com/tmaxmax/go-sse"
)

// maxEventBytes bounds one event. The server's chunks are at most 32 KiB
// of output, which JSON escaping can make six times larger.
const maxEventBytes = 4 << 20

// Stream is the output of one process as it comes, in order, then its
// ending. A connection that drops is reopened at
// /processes/{processId}/events with Last-Event-ID set to the last seq
// delivered, so no chunk is lost or delivered twice.
//
// A Stream is for one goroutine. To stop a Next that waits, cancel the
// context the stream was opened with; then Close it.
type Stream struct {
	c         *Client
	ctx       context.Context
	cancel    context.CancelFunc
	processID string

	// after is the seq of the last chunk delivered (or skipped as lost).
	after int64
	// lost counts the chunks the server had dropped before they were read.
	lost int64

	body io.Closer
	next func() (sse.Event, error, bool)
	stop func()

	redial redialer

	result *ExecResult
	err    error
}

// ExecStream runs a command as Exec does, its output streamed as it is
// produced (Accept: text/event-stream). A command without a processId gets
// one, so that a dropped stream can be resumed. Note that the server
// terminates a streamed command whose client goes away: after a drop, the
// resumed stream brings the output up to that point and the ending
// (status terminated) unless the command had ended by itself. A request
// that fails before the server answers is not retried: the command may or
// may not have started.
func (c *Client) ExecStream(ctx context.Context, req ExecRequest) (*Stream, error) {
	if req.ProcessId == nil {
		id := newProcessID()
		req.ProcessId = &id
	}
	s := c.newStream(ctx, *req.ProcessId)
	resp, err := c.ClientInterface.Exec(s.ctx, req, accept("text/event-stream"))
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := s.open(resp); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Events streams a process's output from the chunk after seq afterSeq (0
// for all that the server still holds), then its ending. A process
// unknown to the server is an *Error with code not_found; output that the
// server no longer holds is one with code output_lost.
func (c *Client) Events(ctx context.Context, processID string, afterSeq int64) (*Stream, error) {
	s := c.newStream(ctx, processID)
	s.after = afterSeq
	if err := s.connect(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (c *Client) newStream(ctx context.Context, processID string) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	return &Stream{c: c, ctx: ctx, cancel: cancel, processID: processID}
}

// ProcessID names the process, also when ExecStream named it.
func (s *Stream) ProcessID() string { return s.processID }

// Lost counts the chunks the server dropped before this stream read them
// (a reader slower than the process, past the server's output ring): the
// seq of the chunk after such a gap jumps by as many.
func (s *Stream) Lost() int64 { return s.lost }

// Result is the process's ending once Next has returned io.EOF, else nil.
// For ExecStream it is the ExecResult without output; for Events it holds
// the fields the Process has in common with an ExecResult.
func (s *Stream) Result() *ExecResult { return s.result }

// Next returns the next chunk of output. At the process's end it returns
// io.EOF and Result holds the ending. Any other error ends the stream: a
// server's problem answer on reconnecting (an *Error), a context ended, or
// five redials in a row that could not connect or got a gateway's 502, 503
// or 504 (a connection that opens and
// breaks again only makes the next redial wait longer, up to 2 s).
func (s *Stream) Next() (OutputChunk, error) {
	for s.err == nil {
		if s.next == nil {
			if err := s.reconnect(); err != nil {
				s.err = err
				break
			}
		}
		ev, err, ok := s.next()
		if !ok || err != nil {
			// The connection ended before the exit event.
			s.closeBody()
			if s.ctx.Err() != nil {
				s.err = s.ctx.Err()
				break
			}
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			s.redial.broke(err)
			continue
		}
		// An event of a kind this client does not know, whose data has no
		// seq, is skipped; data that is not JSON is the server's fault.
		switch ev.Type {
		case "exit":
			var r ExecResult
			if s.err = decode(ev, &r); s.err == nil {
				s.result, s.err = &r, io.EOF
			}
		case "lost":
			var l struct {
				NextSeq int64 `json:"nextSeq"`
			}
			if s.err = decode(ev, &l); s.err == nil && l.NextSeq-1 > s.after {
				s.lost += l.NextSeq - 1 - s.after
				s.after = l.NextSeq - 1
				s.redial.delivered()
			}
		default:
			var c OutputChunk
			if s.err = decode(ev, &c); s.err != nil || c.Seq <= s.after {
				continue // delivered before a reconnect, or no chunk
			}
			s.after = c.Seq
			s.redial.delivered()
			return c, nil
		}
	}
	s.closeBody()
	return OutputChunk{}, s.err
}

func decode(ev sse.Event, v any) error {
	if err := json.Unmarshal([]byte(ev.Data), v); err != nil {
		return fmt.Errorf("snapexec: the server sent a %q event that is not JSON: %w", ev.Type, err)
	}
	return nil
}

// Close ends the stream and releases its connection.
func (s *Stream) Close() error {
	s.cancel()
	s.closeBody()
	if s.err == nil {
		s.err = errors.New("snapexec: the stream is closed")
	}
	return nil
}

// reconnect reopens the stream after the last delivered seq, as redialer
// says.
func (s *Stream) reconnect() error {
	return s.redial.redial(s.ctx, "the event stream of "+s.processID, s.connect)
}

// connect opens /processes/{processId}/events after s.after.
func (s *Stream) connect() error {
	params := &StreamProcessEventsParams{}
	if s.after > 0 {
		id := strconv.FormatInt(s.after, 10)
		params.LastEventID = &id
	}
	resp, err := s.c.StreamProcessEvents(s.ctx, s.processID, params, accept("text/event-stream"))
	if err != nil {
		return err
	}
	return s.open(resp)
}

// open starts reading an answer that should be an event stream.
func (s *Stream) open(resp *http.Response) error {
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mediaType != "text/event-stream" {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode == http.StatusOK {
			return fmt.Errorf("snapexec: the answer is %q, not an event stream: %q", mediaType, snippet(body))
		}
		return errorFrom(resp.StatusCode, body)
	}
	s.body = resp.Body
	s.next, s.stop = iter.Pull2(iter.Seq2[sse.Event, error](sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: maxEventBytes})))
	return nil
}

func (s *Stream) closeBody() {
	if s.stop != nil {
		s.stop()
	}
	if s.body != nil {
		s.body.Close()
	}
	s.body, s.next, s.stop = nil, nil, nil
}
