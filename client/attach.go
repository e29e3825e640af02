package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/coder/websocket"
)

// attachProtocol is the attach WebSocket's subprotocol.
const attachProtocol = "snapexec.v1"

// maxStdinMessage is the most stdin one message carries: the server reads
// at most 64 KiB per message.
const maxStdinMessage = 32 << 10

// errClosed is what an attachment's reads return once Close has run.
var errClosed = errors.New("snapexec: the attachment is closed")

// AttachOptions says where an attachment's output starts.
type AttachOptions struct {
	// AfterSeq starts the output after this seq, such as the Seq of an
	// earlier attachment; 0 starts it at the oldest output the server still
	// holds, so that a late client sees the scrollback.
	AfterSeq int64
}

// AttachOutput is a batch of a process's output on an attachment.
type AttachOutput struct {
	// Seq is the seq of the batch's last chunk: an attachment from
	// AfterSeq Seq goes on right after it.
	Seq int64
	// Data is the output, exactly as the process wrote it: for a process
	// on a terminal, what the terminal shows.
	Data []byte
}

// Attachment is a connection to a process's terminal (or its output, and
// its stdin when it has one open): Read or Next give the output as it
// comes, Write types, Resize resizes, and at the end Result holds how the
// process ended. A connection that drops is reopened after the last batch
// delivered, so no output is lost or delivered twice; stdin written while
// it was down waits for the new one.
//
// Read (or Next) must be called for the attachment to go on: it answers
// the server's pings and reconnects. It is for one goroutine, as are Seq,
// Lost and Result; Write, Resize and Close may be called from others,
// concurrently.
type Attachment struct {
	c         *Client
	ctx       context.Context
	cancel    context.CancelFunc
	processID string

	// What follows belongs to the reading goroutine.

	// after is the seq of the last batch delivered (or skipped as lost).
	after int64
	// gap is set when the resume point had been evicted and the
	// connection restarted at the oldest output retained: its first batch
	// shows how much was lost.
	gap bool
	// pending holds the binary messages of a batch whose seq message has
	// not come yet: a connection that drops before it goes on after the
	// previous batch, which resends them.
	pending [][]byte
	unread  []byte
	lost    int64
	redial  redialer
	result  *ExecResult
	err     error

	mu sync.Mutex
	// conn is nil while the attachment reconnects; up is open exactly then,
	// and closed when a connection is back or the attachment has ended.
	conn   *websocket.Conn
	up     chan struct{}
	ended  bool
	closed bool
}

// attachMessage is a text message of the attach protocol, either way.
type attachMessage struct {
	Type     string  `json:"type"`
	Seq      int64   `json:"seq,omitempty"`
	NextSeq  int64   `json:"nextSeq,omitempty"`
	Status   string  `json:"status,omitempty"`
	ExitCode *int    `json:"exitCode,omitempty"`
	Signal   *string `json:"signal,omitempty"`
	Cols     int     `json:"cols,omitempty"`
	Rows     int     `json:"rows,omitempty"`
}

// Attach connects to a process's attach WebSocket, with the token and
// HTTP client of c's options (an [http.Client] given with [WithHTTPClient],
// such as one that dials a Unix domain socket). A process unknown to the
// server is an *Error with code not_found; an AfterSeq whose output the
// server no longer holds is one with code output_lost.
func (c *Client) Attach(ctx context.Context, processID string, opts AttachOptions) (*Attachment, error) {
	ctx, cancel := context.WithCancel(ctx)
	a := &Attachment{c: c, ctx: ctx, cancel: cancel, processID: processID, after: opts.AfterSeq, up: make(chan struct{})}
	conn, err := a.dial()
	if err != nil {
		cancel()
		return nil, err
	}
	a.setConn(conn)
	return a, nil
}

// Resize sets the size of a process's terminal; the process's foreground
// job gets SIGWINCH. A process without a terminal is an *Error with code
// not_a_tty.
func (c *Client) Resize(ctx context.Context, processID string, cols, rows int) error {
	_, err := Result(c.ResizeProcessWithResponse(ctx, processID, TTYSize{Cols: cols, Rows: rows}))
	return err
}

// ProcessID names the process attached to.
func (a *Attachment) ProcessID() string { return a.processID }

// Seq is the seq of the last output delivered: AttachOptions.AfterSeq for
// a later attachment that goes on from here.
func (a *Attachment) Seq() int64 { return a.after }

// Lost counts the chunks of output the server dropped before this
// attachment read them (a reader slower than the process, past the
// server's output ring).
func (a *Attachment) Lost() int64 { return a.lost }

// Result is how the process ended once Read or Next has returned io.EOF,
// else nil; it holds Status, ExitCode and Signal.
func (a *Attachment) Result() *ExecResult { return a.result }

// Read reads the output; at the process's end it returns io.EOF and
// Result holds the ending. Use Read or Next, not both.
func (a *Attachment) Read(p []byte) (int, error) {
	for len(a.unread) == 0 {
		out, err := a.Next()
		if err != nil {
			return 0, err
		}
		a.unread = out.Data
	}
	n := copy(p, a.unread)
	a.unread = a.unread[n:]
	return n, nil
}

// Next returns the next batch of output. At the process's end it returns
// io.EOF and Result holds the ending. Any other error ends the attachment:
// the server's problem answer on reconnecting (an *Error), a context ended,
// Close, or five redials in a row that could not connect or got a gateway's
// 502, 503 or 504 (a connection that opens and
// breaks again only makes the next redial wait longer, up to 2 s).
func (a *Attachment) Next() (AttachOutput, error) {
	for a.err == nil {
		conn := a.current()
		if conn == nil {
			if err := a.reconnect(); err != nil {
				a.err = err
				if a.isClosed() {
					a.err = errClosed
				}
			}
			continue
		}
		typ, data, err := conn.Read(a.ctx)
		if err != nil {
			a.drop(conn)
			a.pending = nil
			switch {
			case a.isClosed():
				a.err = errClosed
			case a.ctx.Err() != nil:
				a.err = a.ctx.Err()
			default:
				a.redial.broke(err)
			}
			continue
		}
		if typ == websocket.MessageBinary {
			a.pending = append(a.pending, data)
			continue
		}
		var m attachMessage
		if err := json.Unmarshal(data, &m); err != nil {
			a.err = fmt.Errorf("snapexec: the server sent a text message that is not JSON: %w", err)
			break
		}
		// A message of a kind this client does not know is skipped.
		switch m.Type {
		case "seq":
			if out := a.confirm(m.Seq); len(out.Data) > 0 {
				return out, nil
			}
		case "lost":
			if m.NextSeq-1 > a.after {
				a.lost += m.NextSeq - 1 - a.after
				a.after = m.NextSeq - 1
				a.redial.delivered()
			}
		case "exit":
			a.result = &ExecResult{Status: ExitStatus(m.Status), ExitCode: m.ExitCode, Signal: m.Signal}
			a.err = io.EOF
		}
	}
	a.end(a.err == io.EOF)
	return AttachOutput{}, a.err
}

// confirm delivers the pending batch, whose last chunk is seq. Each binary
// message is one chunk, so the batch's first seq tells a gap.
func (a *Attachment) confirm(seq int64) AttachOutput {
	if first := seq - int64(len(a.pending)) + 1; a.gap && first-1 > a.after {
		a.lost += first - 1 - a.after
	}
	out := AttachOutput{Seq: seq, Data: bytes.Join(a.pending, nil)}
	a.after, a.gap, a.pending = seq, false, nil
	a.redial.delivered()
	return out
}

// Write sends p to the process's stdin. While the connection is down it
// waits for the next one. A write that fails as the connection drops is
// not sent again (the server may have had it): its error says so. After
// the attachment's end, Write returns io.ErrClosedPipe.
func (a *Attachment) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		part := p[n:min(len(p), n+maxStdinMessage)]
		if err := a.send(websocket.MessageBinary, part); err != nil {
			return n, err
		}
		n += len(part)
	}
	return n, nil
}

// Resize sets the size of the process's terminal.
func (a *Attachment) Resize(cols, rows int) error {
	m, err := json.Marshal(attachMessage{Type: "resize", Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	return a.send(websocket.MessageText, m)
}

func (a *Attachment) send(typ websocket.MessageType, p []byte) error {
	for {
		a.mu.Lock()
		conn, up, ended := a.conn, a.up, a.ended
		a.mu.Unlock()
		switch {
		case ended:
			return io.ErrClosedPipe
		case conn != nil:
			if err := conn.Write(a.ctx, typ, p); err != nil {
				return fmt.Errorf("snapexec: not sent, the connection to %s dropped: %w", a.processID, err)
			}
			return nil
		}
		select {
		case <-up:
		case <-a.ctx.Done():
			return a.ctx.Err()
		}
	}
}

// Close ends the attachment; the process runs on.
func (a *Attachment) Close() error {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.end(false)
	a.cancel()
	return nil
}

// dial opens the WebSocket after a.after, with the request editors (the
// token) and the HTTP client of the generated client.
func (a *Attachment) dial() (*websocket.Conn, error) {
	seqs := true
	params := &AttachProcessParams{Seqs: &seqs}
	if after := a.after; after > 0 && !a.gap {
		params.AfterSeq = &after
	}
	api := a.c.api
	req, err := NewAttachProcessRequest(api.Server, a.processID, params)
	if err != nil {
		return nil, err
	}
	for _, edit := range api.RequestEditors {
		if err := edit(a.ctx, req); err != nil {
			return nil, err
		}
	}
	hc, ok := api.Client.(*http.Client)
	if !ok {
		return nil, fmt.Errorf("snapexec: attach needs an *http.Client (WithHTTPClient), not a %T", api.Client)
	}
	conn, resp, err := websocket.Dial(a.ctx, req.URL.String(), &websocket.DialOptions{
		HTTPClient: hc, HTTPHeader: req.Header, Subprotocols: []string{attachProtocol},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(resp.Body)
			return nil, errorFrom(resp.StatusCode, body)
		}
		return nil, err
	}
	conn.SetReadLimit(maxEventBytes)
	return conn, nil
}

// reconnect reopens the connection after the last delivered batch, as
// redialer says. When that batch's successors are no longer held, it goes
// on from the oldest held and counts the gap as lost.
func (a *Attachment) reconnect() error {
	return a.redial.redial(a.ctx, "the attachment to "+a.processID, func() error {
		conn, err := a.dial()
		var problem *Error
		if errors.As(err, &problem) && problem.Code == ProblemCodeOutputLost && !a.gap {
			a.gap = true
			conn, err = a.dial()
		}
		if err != nil {
			return err
		}
		a.setConn(conn)
		return nil
	})
}

func (a *Attachment) current() *websocket.Conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

func (a *Attachment) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

func (a *Attachment) setConn(conn *websocket.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		_ = conn.CloseNow()
		return
	}
	a.conn = conn
	close(a.up)
}

// drop lets a broken connection go: writers wait for the next one.
func (a *Attachment) drop(conn *websocket.Conn) {
	_ = conn.CloseNow()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == conn {
		a.conn, a.up = nil, make(chan struct{})
	}
}

// end closes the connection for good (with a close handshake after the
// exit message, which the server's close follows) and wakes the writers.
func (a *Attachment) end(normal bool) {
	a.mu.Lock()
	conn := a.conn
	if !a.ended {
		a.ended = true
		if conn == nil {
			close(a.up)
		}
	}
	a.conn = nil
	a.mu.Unlock()
	switch {
	case conn == nil:
	case normal:
		_ = conn.Close(websocket.StatusNormalClosure, "")
	default:
		_ = conn.CloseNow()
	}
}
