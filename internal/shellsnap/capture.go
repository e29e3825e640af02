package shellsnap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
)

// NewCapturer returns the Capturer that runs every capture as a process of
// procs: an unlisted one (exec.Manager.Spawn), so that the manager's group
// kill ends it, its Shutdown ends it, and its Reaper's keeper knows its group,
// while the process table, client ids and MaxRunning know nothing of it.
func NewCapturer(procs *exec.Manager) Capturer {
	return func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
		return runCapture(ctx, procs, exec.Spec{Argv: argv, Dir: cwd, Env: envpolicy.List(env), Sandbox: sb, NewSession: newSession})
	}
}

// runCapture runs a capture command (docs/design/snapshots.md#capture) as an
// unlisted process of procs and returns its stdout: spec is the command,
// its cwd, exactly the child's environment, its sandbox and whether it runs
// in a session of its own; stdin is /dev/null and stderr is discarded. ctx bounds the
// whole capture; when it ends, or when the output passes MaxSnapshotBytes,
// the group is ended at once. Once the shell has exited, whatever it left in
// its group (a background job a profile started, which may hold stdout) has
// the manager's drain (100 ms) to let go before the group is ended, so it
// neither hangs the capture nor outlives it.
func runCapture(ctx context.Context, procs *exec.Manager, spec exec.Spec) ([]byte, error) {
	if len(spec.Argv) == 0 {
		return nil, &CaptureError{Reason: ReasonMissingCommand, Message: "missing shell snapshot command"}
	}
	// Step 1: spawn. The result keeps one byte past the limit, so that a
	// snapshot that is too large is told from one that just fits.
	spec.MaxOutputBytes, spec.DiscardStderr = MaxSnapshotBytes+1, true
	p, err := procs.Spawn(spec)
	if err != nil {
		return nil, &CaptureError{Reason: ReasonSpawnFailed, Message: "cannot capture shell snapshot: " + err.Error()}
	}
	// Step 2: whatever ends the capture early ends the group too; the manager
	// finishes the kill, and once the process has ended this does nothing.
	defer p.Terminate(exec.StatusTerminated)

	// Step 3: follow the output as it comes, by the deadline, until the
	// process and its group have ended and the output is complete.
	for after := int64(0); ; {
		r, err := p.Read(ctx, after, 0, time.Hour)
		switch {
		case ctx.Err() != nil:
			return nil, &CaptureError{Reason: ReasonTimeout, Message: "shell snapshot capture timed out"}
		case err != nil && !errors.Is(err, exec.ErrOutputLost):
			// Only counting here: output the ring lost is still in the result.
			return nil, &CaptureError{Reason: ReasonReadFailed, Message: "cannot read shell snapshot: " + err.Error()}
		case p.Info().StdoutBytes > MaxSnapshotBytes:
			return nil, &CaptureError{Reason: ReasonTooLarge, Message: fmt.Sprintf("shell snapshot exceeds %d bytes", MaxSnapshotBytes)}
		case r.Closed:
			return captureResult(p.Result())
		}
		after = r.NextSeq - 1
	}
}

// captureResult is the capture's stdout, or how the shell failed.
func captureResult(r exec.Result) ([]byte, error) {
	switch {
	case r.ExitCode == nil:
		sig := unix.SignalNum(r.Signal)
		return nil, &CaptureError{Reason: ReasonNonzeroExit, Message: fmt.Sprintf("shell snapshot capture exited with signal: %d (%s)", sig, r.Signal)}
	case *r.ExitCode != 0:
		return nil, &CaptureError{Reason: ReasonNonzeroExit, Message: fmt.Sprintf("shell snapshot capture exited with exit status: %d", *r.ExitCode)}
	}
	return r.Stdout.Data, nil
}
