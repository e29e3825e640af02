package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-runs itself as the children these tests need (the os/exec
// helper-process pattern): SANDBOX_HELPER names the behaviour. Each prints one
// line, "ok" or the errno's name, and exits 0, so that a test reads what the
// kernel said rather than guess it from an exit code.
const helperVar = "SANDBOX_HELPER"

// noExitSleep spares a helper built with -race the race runtime's one-second
// sleep at exit.
const noExitSleep = "GORACE=atexit_sleep_ms=0"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperVar); mode != "" {
		fmt.Println(helperMain(mode, os.Args[1:]))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperMain(mode string, args []string) string {
	switch mode {
	case "launch":
		return launch(args)
	case "write":
		// Creates or truncates args[0] and writes to it.
		return outcome(os.WriteFile(args[0], []byte("written\n"), 0o644))
	case "chmod":
		return outcome(os.Chmod(args[0], 0o4777))
	case "chown":
		return outcome(os.Lchown(args[0], 65534, 65534))
	case "utime":
		return outcome(os.Chtimes(args[0], time.Unix(1, 0), time.Unix(1, 0)))
	case "setxattr":
		return outcome(unix.Lsetxattr(args[0], "user.snapexec", []byte("x"), 0))
	case "link":
		return outcome(os.Link(args[0], args[1]))
	case "shmget":
		// Finds the System V shared memory segment of key args[0].
		key, err := strconv.Atoi(args[0])
		if err != nil {
			return err.Error()
		}
		_, err = unix.SysvShmGet(key, 0, 0)
		return outcome(err)
	case "open":
		// Opens args[0] for reading and writing, as a terminal is opened.
		f, err := os.OpenFile(args[0], os.O_RDWR|syscall.O_NOCTTY, 0)
		if err == nil {
			f.Close()
		}
		return outcome(err)
	case "openpty":
		return openPTY()
	case "ttyname":
		return ttyName()
	case "rename":
		return outcome(os.Rename(args[0], args[1]))
	case "dial":
		c, err := net.Dial("tcp", args[0])
		if err == nil {
			c.Close()
		}
		return outcome(err)
	case "udp":
		c, err := net.Dial("udp", args[0])
		if err == nil {
			_, err = c.Write([]byte("ping"))
			c.Close()
		}
		return outcome(err)
	case "selfloop":
		// Listens on the loopback and connects to itself.
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return outcome(err)
		}
		defer l.Close()
		c, err := net.Dial("tcp4", l.Addr().String())
		if err == nil {
			c.Close()
		}
		return outcome(err)
	case "abstract-listen":
		// Listens on an abstract Unix socket, says so, and waits to be killed.
		l, err := net.Listen("unix", "@"+args[0])
		fmt.Println(outcome(err))
		if err == nil {
			defer l.Close()
			time.Sleep(time.Hour)
		}
		return ""
	case "abstract-dial":
		c, err := net.Dial("unix", "@"+args[0])
		if err == nil {
			c.Close()
		}
		return outcome(err)
	case "lo-up":
		return outcome(loopbackUp())
	case "kill0":
		pid, _ := strconv.Atoi(args[0])
		return outcome(unix.Kill(pid, 0))
	case "status":
		// Prints the named fields of /proc/self/status.
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return outcome(err)
		}
		var out []string
		for line := range strings.Lines(string(b)) {
			name, value, _ := strings.Cut(line, ":")
			for _, want := range args {
				if name == want {
					out = append(out, name+"="+strings.TrimSpace(value))
				}
			}
		}
		return strings.Join(out, " ")
	case "trace":
		// Prints the argv, the environment and the open fds.
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return outcome(err)
		}
		var names []string
		for _, fd := range fds {
			target, _ := os.Readlink("/proc/self/fd/" + fd.Name())
			names = append(names, fd.Name()+"->"+target)
		}
		return fmt.Sprintf("argv=%q env=%q fds=%q", os.Args, os.Environ(), names)
	}
	return "unknown helper mode " + mode
}

// outcome is "ok" or the name of err's errno.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return "error: " + err.Error()
}

// helperCmd returns a command that runs the test binary as the helper mode.
func helperCmd(t *testing.T, mode string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = []string{helperVar + "=" + mode, noExitSleep}
	return cmd
}

// run starts cmd under p with s and returns its trimmed stdout.
func run(t *testing.T, s *Sandbox, p Policy, cmd *exec.Cmd) string {
	t.Helper()
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if _, err := s.Start(p, cmd, nil); err != nil {
		t.Fatalf("Start(%+v, %v) = %v", p, cmd.Args, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Logf("%v: %v; stderr %q", cmd.Args, err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// newSandbox returns a Sandbox of the running kernel, closed with the test.
func newSandbox(t *testing.T, opts Options) *Sandbox {
	t.Helper()
	s := New(opts)
	t.Cleanup(func() { _ = s.Close() })
	return s
}
