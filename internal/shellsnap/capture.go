package shellsnap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// RunCapture runs a capture command (SHELL-SNAPSHOTS.md 4.1) and returns its
// stdout: env is exactly the child's environment, stdin is /dev/null, stderr is
// discarded, and the child leads a process group of its own. ctx bounds the
// whole read and wait; when it ends, or when the output passes
// MaxSnapshotBytes, the whole group is killed. The group is killed after a
// successful capture too, so that a background job a profile started (and
// that may hold stdout) neither hangs the capture nor outlives it.
func RunCapture(ctx context.Context, argv []string, cwd string, env map[string]string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, &CaptureError{Reason: ReasonMissingCommand, Message: "missing shell snapshot command"}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, &CaptureError{Reason: ReasonSpawnFailed, Message: "cannot capture shell snapshot: " + err.Error()}
	}
	defer outR.Close()
	cmd := &exec.Cmd{
		Path:        argv[0],
		Args:        argv,
		Dir:         cwd,
		Env:         envpolicy.List(env),
		Stdout:      outW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	outW.Close()
	if err != nil {
		return nil, &CaptureError{Reason: ReasonSpawnFailed, Message: "cannot capture shell snapshot: " + err.Error()}
	}
	pgid := cmd.Process.Pid
	// Step 1: wait for the child in the background, so that the read below can
	// be cut short at the deadline, or soon after the child exits.
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// Step 2: whatever happens, end the whole group and reap the child.
	defer func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}()

	// Step 3: read stdout to EOF, at most one byte past the limit, by the
	// deadline. Once the shell has exited, a background job that still holds
	// stdout gets captureDrain to let go, not the rest of the 10 s.
	if deadline, ok := ctx.Deadline(); ok {
		_ = outR.SetReadDeadline(deadline)
	}
	stopRead := context.AfterFunc(ctx, func() { _ = outR.SetReadDeadline(time.Now()) })
	defer stopRead()
	go func() {
		select {
		case <-exited:
			_ = outR.SetReadDeadline(time.Now().Add(captureDrain))
		case <-ctx.Done():
		}
	}()
	out, err := io.ReadAll(io.LimitReader(outR, MaxSnapshotBytes+1))
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil && isClosed(exited) {
		err = nil // the shell is done; what a leftover job holds open is not ours
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil:
		return nil, &CaptureError{Reason: ReasonTimeout, Message: "shell snapshot capture timed out"}
	case err != nil:
		return nil, &CaptureError{Reason: ReasonReadFailed, Message: "cannot read shell snapshot: " + err.Error()}
	case len(out) > MaxSnapshotBytes:
		return nil, &CaptureError{Reason: ReasonTooLarge, Message: fmt.Sprintf("shell snapshot exceeds %d bytes", MaxSnapshotBytes)}
	}

	// Step 4: wait for the exit, by the same deadline.
	select {
	case <-exited:
	case <-ctx.Done():
		return nil, &CaptureError{Reason: ReasonTimeout, Message: "shell snapshot capture timed out"}
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		return nil, &CaptureError{Reason: ReasonNonzeroExit, Message: fmt.Sprintf("shell snapshot capture exited with signal: %d (%s)", ws.Signal(), unix.SignalName(ws.Signal()))}
	case ws.ExitStatus() != 0:
		return nil, &CaptureError{Reason: ReasonNonzeroExit, Message: fmt.Sprintf("shell snapshot capture exited with exit status: %d", ws.ExitStatus())}
	}
	return out, nil
}

// captureDrain is how long stdout may stay open after the capture shell exited.
const captureDrain = 100 * time.Millisecond

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
