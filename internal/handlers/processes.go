package handlers

import (
	"context"
	"net/url"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
)

// StartProcess starts a background process.
func (s *Server) StartProcess(ctx context.Context, req StartProcessRequestObject) (StartProcessResponseObject, error) {
	b := req.Body
	p, err := s.procs.Start(ctx, service.StartInput{
		ExecInput: service.ExecInput{
			ProcessID:   orZero(b.ProcessId),
			Argv:        b.Argv,
			Cwd:         b.Cwd,
			Env:         orZero(b.Env),
			EnvPolicy:   policyFrom(b.EnvPolicy),
			Snapshot:    snapshotRequest(b.ShellSnapshot),
			Sandbox:     sandboxFrom(b.Sandbox),
			Stdin:       stdinBytes(b.Stdin),
			Timeout:     millis(b.TimeoutMs),
			IdleTimeout: millis(b.IdleTimeoutMs),
			TTY:         ttySize(b.Tty),
			Arg0:        orZero(b.Arg0),
		},
		PipeStdin: orZero(b.PipeStdin),
	})
	if err != nil {
		return nil, err
	}
	location := "/processes/" + url.PathEscape(p.ID)
	return StartProcess201JSONResponse{Body: processView(p), Headers: StartProcess201ResponseHeaders{Location: &location}}, nil
}

// ListProcesses lists running and recently ended processes.
func (s *Server) ListProcesses(context.Context, ListProcessesRequestObject) (ListProcessesResponseObject, error) {
	list := s.procs.List()
	out := ListProcesses200JSONResponse{Processes: make([]Process, len(list))}
	for i, p := range list {
		out.Processes[i] = processView(p)
	}
	return out, nil
}

// GetProcess shows one process.
func (s *Server) GetProcess(_ context.Context, req GetProcessRequestObject) (GetProcessResponseObject, error) {
	p, err := s.procs.Get(req.ProcessId)
	if err != nil {
		return nil, err
	}
	return GetProcess200JSONResponse(processView(p)), nil
}

// TerminateProcess ends a process's group.
func (s *Server) TerminateProcess(_ context.Context, req TerminateProcessRequestObject) (TerminateProcessResponseObject, error) {
	running, err := s.procs.Terminate(req.ProcessId)
	if err != nil {
		return nil, err
	}
	return TerminateProcess200JSONResponse{Running: running}, nil
}

// SignalProcess signals a process's group.
func (s *Server) SignalProcess(_ context.Context, req SignalProcessRequestObject) (SignalProcessResponseObject, error) {
	sig, ok := signalOf(req.Body.Signal)
	if !ok {
		return nil, invalid("signal", "signal must be SIGINT, SIGTERM, SIGKILL or SIGHUP")
	}
	delivered, err := s.procs.Signal(req.ProcessId, sig)
	if err != nil {
		return nil, err
	}
	return SignalProcess200JSONResponse{Delivered: delivered}, nil
}

// ResizeProcess resizes a process's terminal.
func (s *Server) ResizeProcess(_ context.Context, req ResizeProcessRequestObject) (ResizeProcessResponseObject, error) {
	size := ttySize(req.Body)
	if err := s.procs.Resize(req.ProcessId, *size); err != nil {
		return nil, err
	}
	return ResizeProcess200JSONResponse{Cols: int(size.Cols), Rows: int(size.Rows)}, nil
}

// signalOf is the signal a request names. The SIG names are those results
// give; the words are their older names.
func signalOf(name SignalRequestSignal) (syscall.Signal, bool) {
	switch name {
	case SIGINT, Interrupt:
		return syscall.SIGINT, true
	case SIGTERM, Terminate:
		return syscall.SIGTERM, true
	case SIGKILL, Kill:
		return syscall.SIGKILL, true
	case SIGHUP, Hangup:
		return syscall.SIGHUP, true
	}
	return 0, false
}

// WriteProcessStdin writes to a process's stdin.
func (s *Server) WriteProcessStdin(ctx context.Context, req WriteProcessStdinRequestObject) (WriteProcessStdinResponseObject, error) {
	b := req.Body
	if b.Data != nil && b.DataBase64 != nil {
		return nil, invalid("data", "give data or dataBase64, not both")
	}
	data := orZero(b.DataBase64)
	if b.Data != nil {
		data = []byte(*b.Data)
	}
	w, err := s.procs.WriteStdin(ctx, req.ProcessId, service.StdinInput{Data: data, WriteID: orZero(b.WriteId), Close: orZero(b.Close)})
	if err != nil {
		return nil, err
	}
	return WriteProcessStdin200JSONResponse{Written: w.Written, AlreadyWritten: w.AlreadyWritten, Duplicate: w.Duplicate, Closed: w.Closed}, nil
}

// ReadProcessOutput long-polls a process's retained output.
func (s *Server) ReadProcessOutput(ctx context.Context, req ReadProcessOutputRequestObject) (ReadProcessOutputResponseObject, error) {
	q := req.Params
	r, err := s.procs.Read(ctx, req.ProcessId, service.ReadInput{
		AfterSeq: orZero(q.AfterSeq),
		MaxBytes: orZero(q.MaxBytes),
		Wait:     time.Duration(orZero(q.WaitMs)) * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	out := ReadProcessOutput200JSONResponse{Chunks: make([]OutputChunk, len(r.Chunks)), NextSeq: r.NextSeq, Exited: r.Exited, ExitCode: r.ExitCode, Closed: r.Closed}
	for i, c := range r.Chunks {
		out.Chunks[i] = chunkView(c)
	}
	return out, nil
}

func processView(p service.ProcessInfo) Process {
	out := Process{
		ProcessId:   p.ID,
		Pid:         p.Pid,
		Argv:        p.Argv,
		Status:      ProcessStatus(p.Status),
		ExitCode:    p.ExitCode,
		StartedAt:   p.StartedAt.UTC(),
		EndedAt:     optTime(p.EndedAt),
		DurationMs:  p.Duration.Milliseconds(),
		Snapshot:    receipt(p.Snapshot),
		Sandbox:     sandboxReport(p.Sandbox),
		PipeStdin:   p.PipeStdin,
		StdoutBytes: p.StdoutBytes,
		StderrBytes: p.StderrBytes,
		NextSeq:     p.NextSeq,
	}
	if p.Dir != "" {
		out.Cwd = &p.Dir
	}
	if p.Signal != "" {
		out.Signal = &p.Signal
	}
	if p.TTY != nil {
		out.Tty = &TTYSize{Cols: int(p.TTY.Cols), Rows: int(p.TTY.Rows)}
	}
	return out
}

func chunkView(c exec.Chunk) OutputChunk {
	out := OutputChunk{Seq: c.Seq, Stream: OutputChunkStream(c.Stream)}
	if utf8.Valid(c.Data) {
		s := string(c.Data)
		out.Data = &s
	} else {
		b := c.Data
		out.DataBase64 = &b
	}
	return out
}
