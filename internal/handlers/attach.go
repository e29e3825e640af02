package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
)

// attachProtocol is the attach WebSocket's subprotocol, the one the server
// answers with.
const attachProtocol = "snapexec.v1"

// bearerProtocol prefixes the token a browser offers as a subprotocol: a
// browser cannot set Authorization on a WebSocket, and a token in the URL
// would end up in logs and history.
const bearerProtocol = "snapexec.bearer."

// attachReadLimit bounds one message from a client: stdin bytes or a resize.
const attachReadLimit = 64 << 10

// pongWait is how long a ping waits for its pong. The pong is read by the
// input loop, which a stdin write to a terminal that does not read holds for
// up to the service's bound (30 s): a live client that pastes faster than the
// terminal reads must not be taken for a vanished one.
const pongWait = time.Minute

// errPeerGone is a client that did not answer a ping.
var errPeerGone = errors.New("the client did not answer a ping")

// attachMessage is a text message of the attach protocol, either way, but
// the exit message.
type attachMessage struct {
	Type    string `json:"type"`
	Cols    int    `json:"cols,omitempty"`
	Rows    int    `json:"rows,omitempty"`
	NextSeq int64  `json:"nextSeq,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
}

// attachExit is the exit message: exitCode and signal are always there,
// null when absent, as in the /exec exit event and a Process.
type attachExit struct {
	Type     string        `json:"type"`
	Status   ProcessStatus `json:"status"`
	ExitCode *int          `json:"exitCode"`
	Signal   *string       `json:"signal"`
}

// withAttach is the generated server with its attach operation served by
// processAttach: a WebSocket takes its connection over, which a strict
// handler's answer cannot. The generated wrapper has bound the operation's
// parameters, and answered a malformed one, before it comes here.
type withAttach struct {
	ServerInterface
	s *Server
}

// AttachProcess serves GET /processes/{processId}/attach. It is the one
// route that takes its connection over; only it pays for giving the
// connection back to the ConnLimit (releaseHijacked).
func (h withAttach) AttachProcess(w http.ResponseWriter, r *http.Request, processID ProcessId, params AttachProcessParams) {
	releaseHijacked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.s.processAttach(w, r, processID, params)
	})).ServeHTTP(w, r)
}

// AttachProcess is the strict server's attach, which is never called:
// withAttach serves the operation, with its connection.
func (s *Server) AttachProcess(context.Context, AttachProcessRequestObject) (AttachProcessResponseObject, error) {
	return nil, errors.New("the attach operation is served by withAttach")
}

// processAttach serves the attach WebSocket of process id: the process's
// output from afterSeq (or the oldest retained) as binary messages, then live,
// then an exit message and a normal close; the client's binary messages are
// its stdin and its resize messages resize its terminal. An unknown process
// (404), a resume point never sent (400) or evicted (410) is refused before
// the upgrade.
func (s *Server) processAttach(w http.ResponseWriter, r *http.Request, id string, params AttachProcessParams) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Upgrade", "websocket")
		writeProblem(w, r, &problem{status: http.StatusUpgradeRequired, code: InvalidRequest, field: "Upgrade",
			detail: "attach is a WebSocket: send the upgrade request"})
		return
	}
	var after int64
	if params.AfterSeq != nil {
		after = *params.AfterSeq
	}
	seqs := params.Seqs != nil && *params.Seqs
	a, err := s.procs.Attach(id, after)
	switch {
	case errors.Is(err, exec.ErrSeqAhead):
		writeProblem(w, r, invalid("afterSeq", "afterSeq is beyond the output produced so far: resume from a seq the server sent"))
		return
	case err != nil:
		writeProblem(w, r, err)
		return
	}
	defer a.Close()
	// checkOrigin has refused every other origin before the upgrade; Accept
	// checks it again.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{attachProtocol}})
	if err != nil {
		return // Accept has answered
	}
	conn.SetReadLimit(attachReadLimit)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		defer cancel()
		attachInput(ctx, conn, a)
	}()
	err = attachOutput(ctx, conn, a, seqs)
	switch {
	case err == nil:
		_ = conn.Close(websocket.StatusNormalClosure, "")
	case ctx.Err() != nil, errors.Is(err, errPeerGone):
		_ = conn.CloseNow() // the client went away, or closed
	default:
		zerolog.Ctx(r.Context()).Warn().Err(err).Msg("attach ended")
		_ = conn.Close(websocket.StatusInternalError, "internal error")
	}
}

// attachOutput sends the attachment's output until it is complete, then the
// exit message; with seqs, a seq message after each batch of output.
func attachOutput(ctx context.Context, conn *websocket.Conn, a *service.Attachment, seqs bool) error {
	for {
		r, err := a.Next(ctx, heartbeat)
		if errors.Is(err, exec.ErrOutputLost) {
			// A slow client fell behind the ring: say so, and go on from
			// what is still there.
			err = writeMessage(ctx, conn, attachMessage{Type: "lost", NextSeq: r.NextSeq})
		}
		if err != nil {
			return err
		}
		for _, c := range r.Chunks {
			if err := conn.Write(ctx, websocket.MessageBinary, c.Data); err != nil {
				return err
			}
		}
		if len(r.Chunks) == 0 && !r.Closed {
			// Quiet for a heartbeat: a client that vanished without a close
			// (a dropped network) is found by the pong it does not send.
			pctx, cancel := context.WithTimeout(ctx, pongWait)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return errPeerGone
			}
		}
		if seqs && len(r.Chunks) > 0 {
			if err := writeMessage(ctx, conn, attachMessage{Type: "seq", Seq: r.NextSeq - 1}); err != nil {
				return err
			}
		}
		if r.Closed {
			p := processView(a.Info())
			return writeMessage(ctx, conn, attachExit{Type: "exit", Status: p.Status, ExitCode: p.ExitCode, Signal: p.Signal})
		}
	}
}

// attachInput applies the client's messages until the connection ends:
// stdin bytes, written in order (a terminal that does not read holds the
// next message back), and resizes. What cannot be applied (the process has
// no stdin or no terminal, or has exited) is dropped: the output says the
// rest.
func attachInput(ctx context.Context, conn *websocket.Conn, a *service.Attachment) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			_ = a.WriteStdin(ctx, data)
			continue
		}
		var m attachMessage
		if err := json.Unmarshal(data, &m); err != nil || m.Type != "resize" {
			_ = conn.Close(websocket.StatusUnsupportedData, `text messages are {"type":"resize","cols":C,"rows":R}`)
			return
		}
		_ = a.Resize(exec.TTYSize{Cols: uint16(min(max(m.Cols, 0), 1<<16-1)), Rows: uint16(min(max(m.Rows, 0), 1<<16-1))})
	}
}

// writeMessage sends m, an attachMessage or attachExit, as a text message.
func writeMessage(ctx context.Context, conn *websocket.Conn, m any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, data)
}
