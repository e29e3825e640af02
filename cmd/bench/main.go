// Command bench measures snapexec against spawning the same programs directly:
// the latency of login-shell commands with and without a shell snapshot, the
// cost of a first capture, /exec throughput, and the server's memory with a
// full snapshot cache. It builds the server, runs it as a subprocess on a
// loopback port, prints a table with a verdict against each target, and writes
// bench.json and bench.svg into the -out directory.
//
//	go run ./cmd/bench -out bench-results
//
// It exits non-zero only when the run is broken (a wrong answer, a server
// failure); a missed target is reported, not fatal.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/snapexec/snapexec/client"
)

// runTimeout bounds a whole run, whatever the flags say.
const runTimeout = 15 * time.Minute

func main() {
	if os.Getenv(relayEnv) != "" {
		fmt.Fprintln(os.Stderr, "relay:", serveRelay(os.Stdout))
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	out       string
	profile   string
	rounds    int
	firstRuns int
	requests  int
	// hop measures only the hop: /exec /bin/true over TCP and the socket
	// against a direct spawn, the throughput, and the idle memory.
	hop bool
	// zsh measures only the zsh row: a warm zsh command in a standby and
	// without one, against a direct zsh -c.
	zsh bool
	// files measures only the files rows: a read and a write through the
	// files API against cat and cp.
	files bool
	// session measures only the session row: a session command against a
	// warm /exec, with and without a standby, and without a snapshot.
	session bool
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.out, "out", "bench-results", "directory for bench.json and bench.svg")
	fs.StringVar(&o.profile, "profile", "", "login profile sourced by the benchmark HOME's .bash_profile (default heavy_profile.sh, built in: 0.2 s of start-up work, 200 functions, 50 aliases, 100 exports)")
	fs.IntVar(&o.rounds, "n", 40, "interleaved latency rounds (one sample of each mode per round)")
	fs.IntVar(&o.firstRuns, "first", 5, "first captures (and plain logins) to time")
	fs.IntVar(&o.requests, "requests", 400, "requests per throughput measurement and concurrency level")
	fs.BoolVar(&o.hop, "hop", false, "measure only the hop: /exec /bin/true (TCP and Unix socket) against a direct spawn, its throughput, and the idle server's memory")
	fs.BoolVar(&o.files, "files", false, "measure only the files rows: a read and a write of one file through the files API against cat and cp")
	fs.BoolVar(&o.zsh, "zsh", false, "measure only the zsh row: a warm zsh -lc in a standby and without one (a fresh replay) against a direct zsh -c")
	fs.BoolVar(&o.session, "session", false, "measure only the session row: a session command after a state change against a warm /exec (with and without a standby) and /exec without a snapshot")
	if err := fs.Parse(args[1:]); err != nil {
		return o, err
	}
	if o.rounds < 1 || o.rounds > 10000 || o.firstRuns < 1 || o.firstRuns > 1000 || o.requests < 16 || o.requests > 100000 {
		return o, errors.New("-n must be 1..10000, -first 1..1000, -requests 16..100000")
	}
	return o, nil
}

// run is the whole benchmark: build, start, measure, stop, report.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()

	tmp, err := os.MkdirTemp("", "snapexec-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	fmt.Fprintln(stdout, "building the server")
	bin := filepath.Join(tmp, "snapexec")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/server")
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/server: %w", err)
	}
	home, err := loginHome(tmp, o.profile)
	if err != nil {
		return err
	}

	filesDir := filepath.Join(tmp, "files")
	if err := os.Mkdir(filesDir, 0o755); err != nil {
		return err
	}
	// The latency modes keep about a dozen launches warm at once, more than
	// the default --standby-shells: each would end another's standby. The
	// server also listens on a Unix domain socket, for /exec over it: the
	// same process as over TCP, kept as busy.
	sock := "unix:" + filepath.Join(tmp, "snapexec.sock")
	srv, err := startServer(ctx, bin, filepath.Join(tmp, "server.log"), []string{"127.0.0.1:0", sock}, "--files-root", filesDir, "--standby-shells", "16")
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := srv.stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		if err != nil {
			srv.logTail(stderr, 20)
		}
	}()
	b := &bench{srv: srv, unix: srv.endpoints[1], home: home, files: filesDir}
	res, err := b.measure(ctx, o, tmp, stdout)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	printReport(stdout, res)
	if err := writeJSON(filepath.Join(o.out, "bench.json"), res); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "bench.svg"), chart(res), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", filepath.Join(o.out, "bench.json"), filepath.Join(o.out, "bench.svg"))
	return nil
}

// heavyProfile is the default login profile: a synthetic slow one, as
// nvm, conda and pyenv make a profile slow.
//
//go:embed heavy_profile.sh
var heavyProfile string

// loginHome makes a HOME whose .bash_profile and .zprofile source a copy of
// the profile (heavyProfile when profile is empty).
func loginHome(tmp, profile string) (string, error) {
	src := []byte(heavyProfile)
	if profile != "" {
		var err error
		if src, err = os.ReadFile(profile); err != nil {
			return "", fmt.Errorf("login profile (-profile): %w", err)
		}
	}
	home := filepath.Join(tmp, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(home, "profile.sh"), src, 0o644); err != nil {
		return "", err
	}
	// zsh's login reads .zprofile: the same profile, which is zsh too.
	for _, name := range []string{".bash_profile", ".zprofile"} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(". \"$HOME/profile.sh\"\n"), 0o644); err != nil {
			return "", err
		}
	}
	return home, nil
}

// server is the snapexec subprocess and a client for each of its addresses;
// its own fields are the first address's (TCP).
type server struct {
	*endpoint
	endpoints []*endpoint // one per address, in the order given
	cmd       *exec.Cmd
	logPath   string
	exited    chan error // receives Wait's result once
}

// endpoint is a client of the server through one of its addresses.
type endpoint struct {
	base string // http://127.0.0.1:PORT, or http://localhost for a socket
	http *http.Client
	api  *client.Client
}

// startServer runs bin with args listening on addrs (loopback host:ports,
// or unix:PATH), its log in logPath, and waits for the lines that give its
// addresses.
func startServer(ctx context.Context, bin, logPath string, addrs []string, args ...string) (*server, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	var argv []string
	for _, a := range addrs {
		argv = append(argv, "--addr", a)
	}
	cmd := exec.Command(bin, append(argv, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stderr = logFile
	// The server dies with the bench, even when the bench is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, logPath: logPath, exited: make(chan error, 1)}
	listening := make(chan string, len(addrs))
	go func() {
		sc := bufio.NewScanner(out)
		for n := 0; n < len(addrs) && sc.Scan(); {
			if a, ok := strings.CutPrefix(sc.Text(), "snapexec listening on "); ok {
				listening <- a
				n++
			}
		}
		_, _ = io.Copy(io.Discard, out)
		s.exited <- cmd.Wait()
	}()
	for range addrs {
		select {
		case url := <-listening:
			ep, err := newEndpoint(url)
			if err != nil {
				_ = cmd.Process.Kill()
				return nil, err
			}
			s.endpoints = append(s.endpoints, ep)
		case err := <-s.exited:
			return nil, fmt.Errorf("the server exited before listening: %v", err)
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			return nil, errors.New("the server printed no listening line within 30 s")
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return nil, ctx.Err()
		}
	}
	s.endpoint = s.endpoints[0]
	return s, nil
}

// newEndpoint is a client of the server at url, as the server prints it.
func newEndpoint(url string) (*endpoint, error) {
	ep := &endpoint{base: url}
	transport := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 32, IdleConnTimeout: time.Minute}
	if path, ok := strings.CutPrefix(url, "unix:"); ok {
		// The socket whatever the URL's host (client/doc.go).
		transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, "unix", path)
		}
		ep.base = "http://localhost"
	}
	ep.http = &http.Client{Timeout: 30 * time.Second, Transport: transport}
	api, err := client.New(ep.base, client.WithHTTPClient(ep.http))
	if err != nil {
		return nil, err
	}
	ep.api = api
	return ep, nil
}

// stop sends SIGTERM, waits up to 10 s for a clean exit, then kills.
func (s *server) stop() error {
	for _, ep := range s.endpoints {
		ep.http.CloseIdleConnections()
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			return fmt.Errorf("server exit: %w", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("the server did not stop within 10 s of SIGTERM")
	}
}

// logTail writes the last n lines of the server's log, to explain a failure.
func (s *server) logTail(w io.Writer, n int) {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	fmt.Fprintln(w, "server log, last lines:")
	for _, l := range lines[max(0, len(lines)-n):] {
		fmt.Fprintln(w, "  "+l)
	}
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on every Linux ABI).
const clockTick = 10 * time.Millisecond

// cpu is the CPU time the server itself has used (user and system, without
// its children's).
func (s *server) cpu() (time.Duration, error) {
	return statCPU(s.cmd.Process.Pid, false)
}

// cpuWithChildren is the CPU time of the server and of every child it has
// reaped: its commands, captures and standby shells that ended.
func (s *server) cpuWithChildren() (time.Duration, error) {
	return statCPU(s.cmd.Process.Pid, true)
}

// statCPU reads pid's CPU time (user and system) from /proc/PID/stat, with
// that of its reaped children when children is set.
func statCPU(pid int, children bool) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: count after it.
	// Fields 14 to 17 (utime, stime, cutime, cstime) are the 12th to 15th
	// after it.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 15 {
		return 0, errors.New("short /proc stat")
	}
	fields := f[11:13]
	if children {
		fields = f[11:15]
	}
	var ticks int64
	for _, field := range fields {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// runTime is the time on a CPU, to the nanosecond, of every thread of the
// server and of its standby shells now (/proc/PID/task/TID/schedstat).
func (s *server) runTime() time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", s.cmd.Process.Pid))
	for _, pid := range s.standbyPids() {
		tasks = append(tasks, fmt.Sprintf("/proc/%d/schedstat", pid))
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

// memory reads the server's resident set now (VmRSS) and at its peak (VmHWM), in MiB.
func (s *server) memory() (rss, hwm float64, err error) {
	return statusMemory(s.cmd.Process.Pid)
}

// standbyMemory counts the server's standby shells and sums their VmRSS.
func (s *server) standbyMemory() (n int, rss float64) {
	for _, pid := range s.standbyPids() {
		r, _, err := statusMemory(pid)
		if err != nil {
			continue // ended meanwhile
		}
		n, rss = n+1, rss+r
	}
	return n, round3(rss)
}

// standbyPids returns the server's standby shells now: children whose
// command line carries the standby's script variable.
func (s *server) standbyPids() []int {
	var pids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		i := bytes.LastIndexByte(data, ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:])) // state ppid ...
		if len(f) < 2 || f[1] != strconv.Itoa(s.cmd.Process.Pid) {
			continue
		}
		dir := filepath.Dir(stat)
		if cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline")); !bytes.Contains(cmd, []byte("__CODEX_SHELL_SNAPSHOT_SCRIPT")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		pids = append(pids, pid)
	}
	return pids
}

// statusMemory reads pid's VmRSS and VmHWM in MiB.
func statusMemory(pid int) (rss, hwm float64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(data)) {
		name, value, _ := strings.Cut(line, ":")
		kb, convErr := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		switch {
		case name != "VmRSS" && name != "VmHWM":
		case convErr != nil:
			return 0, 0, fmt.Errorf("/proc status %s: %w", name, convErr)
		case name == "VmRSS":
			rss = round3(kb / 1024)
		default:
			hwm = round3(kb / 1024)
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, errors.New("no VmRSS/VmHWM in /proc status")
	}
	return rss, hwm, nil
}
