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

// Processes is the process table.
type Processes interface {
	Start(ctx context.Context, in service.StartInput) (*exec.Process, error)
	Processes() []*exec.Process
	Process(id string) (*exec.Process, error)
	Terminate(id string) (bool, error)
	Signal(id string, sig syscall.Signal) (bool, error)
}

// StartProcess starts a background process.
func (s *Server) StartProcess(ctx context.Context, req StartProcessRequestObject) (StartProcessResponseObject, error) {
	b := req.Body
	in, err := s.execInput(&ExecRequest{
		ProcessId: b.ProcessId, Argv: b.Argv, Cwd: b.Cwd, Env: b.Env, EnvPolicy: b.EnvPolicy,
		ShellSnapshot: b.ShellSnapshot, Stdin: b.Stdin, TimeoutMs: b.TimeoutMs, IdleTimeoutMs: b.IdleTimeoutMs,
	})
	if err != nil {
		return nil, err
	}
	if b.TimeoutMs == nil {
		in.Timeout = 0 // a background process runs until it ends or is ended
	}
	p, err := s.procs.Start(ctx, service.StartInput{ExecInput: in, PipeStdin: b.PipeStdin != nil && *b.PipeStdin})
	if err != nil {
		return nil, err
	}
	location := "/processes/" + url.PathEscape(p.ID())
	return StartProcess201JSONResponse{Body: processView(p), Headers: StartProcess201ResponseHeaders{Location: &location}}, nil
}

// ListProcesses lists running and recently ended processes.
func (s *Server) ListProcesses(context.Context, ListProcessesRequestObject) (ListProcessesResponseObject, error) {
	list := s.procs.Processes()
	out := ListProcesses200JSONResponse{Processes: make([]Process, len(list))}
	for i, p := range list {
		out.Processes[i] = processView(p)
	}
	return out, nil
}

// GetProcess shows one process.
func (s *Server) GetProcess(_ context.Context, req GetProcessRequestObject) (GetProcessResponseObject, error) {
	p, err := s.procs.Process(req.ProcessId)
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
	// The SIG names are those results give; the words are their older names.
	sig, ok := map[SignalRequestSignal]syscall.Signal{
		SIGINT: syscall.SIGINT, SIGTERM: syscall.SIGTERM, SIGKILL: syscall.SIGKILL, SIGHUP: syscall.SIGHUP,
		Interrupt: syscall.SIGINT, Terminate: syscall.SIGTERM, Kill: syscall.SIGKILL, Hangup: syscall.SIGHUP,
	}[req.Body.Signal]
	if !ok {
		return nil, invalid("signal", "signal must be SIGINT, SIGTERM, SIGKILL or SIGHUP")
	}
	delivered, err := s.procs.Signal(req.ProcessId, sig)
	if err != nil {
		return nil, err
	}
	return SignalProcess200JSONResponse{Delivered: delivered}, nil
}

// WriteProcessStdin writes to a process's stdin.
func (s *Server) WriteProcessStdin(ctx context.Context, req WriteProcessStdinRequestObject) (WriteProcessStdinResponseObject, error) {
	b := req.Body
	var data []byte
	switch {
	case b.Data != nil && b.DataBase64 != nil:
		return nil, invalid("data", "give data or dataBase64, not both")
	case b.Data != nil:
		data = []byte(*b.Data)
	case b.DataBase64 != nil:
		data = *b.DataBase64
	}
	if err := s.limits.checkStdin("data", len(data)); err != nil {
		return nil, err
	}
	p, err := s.procs.Process(req.ProcessId)
	if err != nil {
		return nil, err
	}
	writeID := ""
	if b.WriteId != nil {
		writeID = *b.WriteId
	}
	closing := b.Close != nil && *b.Close
	// A child that never reads must not hold the request forever.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := p.WriteStdin(ctx, data, writeID, closing)
	if err != nil {
		return nil, err
	}
	return WriteProcessStdin200JSONResponse{Written: w.Written, AlreadyWritten: w.AlreadyWritten, Duplicate: w.Duplicate, Closed: !p.Info().StdinOpen}, nil
}

// ReadProcessOutput long-polls a process's retained output.
func (s *Server) ReadProcessOutput(ctx context.Context, req ReadProcessOutputRequestObject) (ReadProcessOutputResponseObject, error) {
	p, err := s.procs.Process(req.ProcessId)
	if err != nil {
		return nil, err
	}
	var after int64
	if req.Params.AfterSeq != nil {
		after = *req.Params.AfterSeq
	}
	maxBytes, wait := 0, time.Duration(0)
	if req.Params.MaxBytes != nil {
		maxBytes = *req.Params.MaxBytes
	}
	if req.Params.WaitMs != nil {
		wait = time.Duration(*req.Params.WaitMs) * time.Millisecond
	}
	r, err := p.Read(ctx, after, maxBytes, wait)
	if err != nil {
		return nil, err
	}
	out := ReadProcessOutput200JSONResponse{Chunks: make([]OutputChunk, len(r.Chunks)), NextSeq: r.NextSeq, Exited: r.Exited, ExitCode: r.ExitCode, Closed: r.Closed}
	for i, c := range r.Chunks {
		out.Chunks[i] = chunkView(c)
	}
	return out, nil
}

func processView(p *exec.Process) Process {
	in := p.Info()
	out := Process{
		ProcessId:   in.ID,
		Pid:         in.Pid,
		Argv:        in.Argv,
		Status:      ProcessStatus(in.Status),
		ExitCode:    in.ExitCode,
		StartedAt:   in.StartedAt.UTC(),
		EndedAt:     optTime(in.EndedAt),
		DurationMs:  in.Duration.Milliseconds(),
		Snapshot:    receipt(service.Receipt(p)),
		PipeStdin:   in.PipeStdin,
		StdoutBytes: in.StdoutBytes,
		StderrBytes: in.StderrBytes,
		NextSeq:     in.NextSeq,
	}
	if in.Dir != "" {
		out.Cwd = &in.Dir
	}
	if in.Signal != "" {
		out.Signal = &in.Signal
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
