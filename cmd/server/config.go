package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/files"
	"github.com/snapexec/snapexec/internal/handlers"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// config is everything the server can be told at start.
type config struct {
	// addrs are the addresses the server listens on, all alike.
	addrs          []string
	token          string
	allowedHosts   []string
	limits         limitsConfig
	logLevel       string
	logFormat      string
	grace          time.Duration
	defaultTimeout time.Duration
	maxTimeout     time.Duration
	retention      time.Duration
	maxOutputBytes int
	standbyShells  int
	standbyLaunch  int
	standbyFills   int
	standbyIdle    time.Duration
	bodyTimeout    time.Duration
	idleTimeout    time.Duration
	maxConns       int
	captureTimeout time.Duration
	// defaultSandbox confines every request that gives no sandbox.
	defaultSandbox sandbox.Policy
	// filesRoots are the directories the files API serves; none turns it off.
	filesRoots    []string
	filesMaxBytes int64
	filesMaxList  int
	printVersion  bool
	sessions      session.Options
}

// limitsConfig bounds what one request may ask for and what the server holds.
type limitsConfig struct {
	bodyBytes     int64
	args          int
	argBytes      int
	env           int
	envBytes      int
	stdinBytes    int
	running       int
	retained      int
	retainedBytes int64
	captures      int
}

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MiB): a
// connection that has not yet sent its token may hold that much, at most
// --max-connections of them.
const maxHeaderBytes = 32 << 10

// options is the configuration as each package takes it. What exists only
// once the server runs (the reaper, telemetry, the capturer, the process
// manager, the server's environment) run adds.
type options struct {
	exec      exec.Options
	snapshots shellsnap.Options
	service   service.Options
	router    handlers.RouterOptions
	http      *http.Server
	maxConns  int
	// filesRoots and files open the files API's roots; no root, no API.
	filesRoots []string
	files      files.Options
	// openFiles is the files API over filesRoots, set by run; nil when off.
	openFiles handlers.Files
}

// options maps c onto every package's options: the one place that does.
func (c config) options() options {
	return options{
		exec: exec.Options{
			Grace:                  c.grace,
			MaxOutputBytes:         c.maxOutputBytes,
			Retention:              c.retention,
			MaxRunning:             c.limits.running,
			MaxRetained:            c.limits.retained,
			MaxRetainedOutputBytes: c.limits.retainedBytes,
		},
		snapshots: shellsnap.Options{Timeout: c.captureTimeout, MaxConcurrentCaptures: c.limits.captures},
		service: service.Options{
			Limits: service.Limits{
				DefaultTimeout: c.defaultTimeout,
				MaxTimeout:     c.maxTimeout,
				MaxArgs:        c.limits.args,
				MaxArgBytes:    c.limits.argBytes,
				MaxEnv:         c.limits.env,
				MaxEnvBytes:    c.limits.envBytes,
				MaxStdinBytes:  c.limits.stdinBytes,
				MaxOutputBytes: c.maxOutputBytes,
			},
			Standby:        standby.Options{Max: c.standbyShells, PerLaunch: c.standbyLaunch, Fills: c.standbyFills, Idle: c.standbyIdle},
			DefaultSandbox: c.defaultSandbox,
			Sessions:       c.sessions,
		},
		router: handlers.RouterOptions{
			Security:    handlers.Security{Token: c.token, AllowedHosts: c.allowedHosts, MaxBodyBytes: c.limits.bodyBytes, MaxUploadBytes: c.filesMaxBytes},
			BodyTimeout: c.bodyTimeout,
		},
		// No ReadTimeout or WriteTimeout: they would cut event streams, long
		// polls and long commands. A body's deadline is per request
		// (BodyTimeout); headers have theirs, and idle connections are closed.
		http: &http.Server{
			ReadHeaderTimeout: 10 * time.Second,
			MaxHeaderBytes:    maxHeaderBytes,
			IdleTimeout:       c.idleTimeout,
		},
		maxConns:   c.maxConns,
		filesRoots: c.filesRoots,
		files:      files.Options{MaxFileBytes: c.filesMaxBytes, MaxListEntries: c.filesMaxList},
	}
}

// parseConfig reads flags, each falling back to an environment variable and
// then to its default. Flags win over the environment.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.Func("addr", "listen address: HOST:PORT, or unix:/PATH for a Unix socket only this user may use; repeat to listen on several, all serving alike (SNAPEXEC_ADDR: comma-separated; default 127.0.0.1:8080)", func(v string) error {
		c.addrs = append(c.addrs, v)
		return nil
	})
	fs.StringVar(&c.logLevel, "log-level", env("SNAPEXEC_LOG_LEVEL", "info"), "debug, info, warn or error (SNAPEXEC_LOG_LEVEL)")
	fs.StringVar(&c.logFormat, "log-format", env("SNAPEXEC_LOG_FORMAT", "json"), "json or console (SNAPEXEC_LOG_FORMAT)")
	durations := []struct {
		p    *time.Duration
		name string
		env  string
		def  string
		help string
	}{
		{&c.grace, "grace", "SNAPEXEC_GRACE", "2s", "time between SIGTERM and SIGKILL to a process group"},
		{&c.defaultTimeout, "default-timeout", "SNAPEXEC_DEFAULT_TIMEOUT", "10m", "timeout of a command that gives no timeoutMs (0: none)"},
		{&c.maxTimeout, "max-timeout", "SNAPEXEC_MAX_TIMEOUT", "24h", "largest timeoutMs a request may give"},
		{&c.retention, "retention", "SNAPEXEC_RETENTION", "30s", "how long a finished process stays readable"},
		{&c.standbyIdle, "standby-idle", "SNAPEXEC_STANDBY_IDLE", "1m", "how long a standby shell waits for a command before it ends"},
		{&c.bodyTimeout, "body-timeout", "SNAPEXEC_BODY_TIMEOUT", "30s", "how long a request body may take to arrive after the request's headers"},
		{&c.idleTimeout, "idle-timeout", "SNAPEXEC_IDLE_TIMEOUT", "2m", "how long a keep-alive connection may wait for its next request"},
		{&c.sessions.IdleTimeout, "session-idle-timeout", "SNAPEXEC_SESSION_IDLE_TIMEOUT", "30m", "how long a shell session no command uses lives on"},
		{&c.captureTimeout, "capture-timeout", "SNAPEXEC_CAPTURE_TIMEOUT", "10s", "how long one snapshot capture may run (and wait for a slot); a command waits for it at most its own timeout"},
	}
	for _, d := range durations {
		def, err := time.ParseDuration(env(d.env, d.def))
		if err != nil {
			return c, fmt.Errorf("%s: %w", d.env, err)
		}
		fs.DurationVar(d.p, d.name, def, d.help+" ("+d.env+")")
	}
	tokenFile := fs.String("token-file", getenv("SNAPEXEC_TOKEN_FILE"), "file holding the bearer token every route but /healthz and /readyz requires (SNAPEXEC_TOKEN_FILE; or the token itself in SNAPEXEC_TOKEN)")
	defaultSandbox := fs.String("default-sandbox", getenv("SNAPEXEC_DEFAULT_SANDBOX"), `the sandbox of every command and prewarm whose request gives none, as the API's sandbox object in JSON, such as {"writableRoots":["/work"],"network":"none"}; a server that cannot enforce it does not start (SNAPEXEC_DEFAULT_SANDBOX)`)
	fs.Func("files-root", "a directory the files API (/files) serves, with everything beneath it; repeat for several; none turns the API off (SNAPEXEC_FILES_ROOTS: colon-separated)", func(v string) error {
		c.filesRoots = append(c.filesRoots, v)
		return nil
	})
	fs.Int64Var(&c.filesMaxBytes, "files-max-bytes", 1<<30, "bytes of a file written or copied through /files; beyond it 413")
	fs.IntVar(&c.filesMaxList, "files-max-list", 1000, "entries of one /files/list or /files/walk page")
	hosts := fs.String("allowed-hosts", getenv("SNAPEXEC_ALLOWED_HOSTS"), "comma-separated Host names accepted besides the loopback ones; * for any (SNAPEXEC_ALLOWED_HOSTS)")
	ints := []struct {
		p    *int
		name string
		def  int
		help string
	}{
		{&c.maxOutputBytes, "max-output-bytes", 1 << 20, "bytes of each stream kept in an /exec response, and the largest maxOutputBytes"},
		{&c.limits.args, "max-args", 4096, "argv elements a request may give"},
		{&c.limits.argBytes, "max-arg-bytes", 1 << 20, "total bytes of argv"},
		{&c.limits.env, "max-env", 4096, "variables in env (and in envPolicy.set)"},
		{&c.limits.envBytes, "max-env-bytes", 1 << 20, "total bytes of env names and values"},
		{&c.limits.stdinBytes, "max-stdin-bytes", 4 << 20, "bytes of stdin in a request or a write"},
		{&c.limits.running, "max-running", 256, "processes running at once; beyond it 429"},
		{&c.limits.retained, "max-retained", 256, "finished processes kept for reading"},
		{&c.limits.captures, "max-captures", 4, "snapshot captures running at once; others wait"},
		{&c.sessions.MaxSessions, "max-sessions", 64, "shell sessions held at once; beyond it 429"},
		{&c.sessions.MaxStateBytes, "max-session-state-bytes", 4 << 20, "bytes of a session's shell state; a command that leaves more keeps the session's state as it was"},
		{&c.sessions.History, "session-history", 20, "commands a session shows"},
	}
	for _, v := range ints {
		fs.IntVar(v.p, v.name, v.def, v.help)
	}
	maxConns, err := intEnv("SNAPEXEC_MAX_CONNECTIONS", getenv, defaultMaxConns())
	if err != nil {
		return c, err
	}
	fs.IntVar(&c.maxConns, "max-connections", maxConns, "open connections; at the cap a new one closes an idle one, unauthorised ones first (SNAPEXEC_MAX_CONNECTIONS; default 512, or half the open-file limit when that is lower)")
	fs.IntVar(&c.standbyShells, "standby-shells", 8, "bash and zsh shells kept restored ahead of the next warm snapshot command, over all launches (0: none); as many sessions may keep one for their next command")
	fs.IntVar(&c.standbyLaunch, "standby-per-launch", 2, "standby shells one launch may keep when its commands come faster than one is restored")
	fs.IntVar(&c.standbyFills, "standby-fills", 1, "standby shells restoring at once (the CPU they take from commands)")
	fs.Int64Var(&c.limits.bodyBytes, "max-body-bytes", 8<<20, "bytes of a request body; beyond it 413")
	fs.Int64Var(&c.limits.retainedBytes, "max-retained-output-bytes", 256<<20, "output bytes kept over all finished processes")
	fs.BoolVar(&c.printVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args[1:]); err != nil {
		return c, err
	}
	if c.printVersion {
		return c, nil // whatever else is set, or amiss, is not needed to print it
	}
	for _, v := range ints {
		if *v.p < 1 {
			return c, fmt.Errorf("--%s must be at least 1", v.name)
		}
	}
	if c.limits.bodyBytes < 1024 || c.limits.retainedBytes < 1 {
		// 0 would mean the manager's default (256 MiB), not none.
		return c, fmt.Errorf("--max-body-bytes must be at least 1024 and --max-retained-output-bytes at least 1")
	}
	if len(c.addrs) == 0 {
		for _, a := range strings.Split(env("SNAPEXEC_ADDR", "127.0.0.1:8080"), ",") {
			c.addrs = append(c.addrs, strings.TrimSpace(a))
		}
	}
	if err := checkAddrs(c.addrs); err != nil {
		return c, err
	}
	if len(c.filesRoots) == 0 {
		for _, root := range strings.Split(getenv("SNAPEXEC_FILES_ROOTS"), ":") {
			if root != "" {
				c.filesRoots = append(c.filesRoots, root)
			}
		}
	}
	if c.filesMaxBytes < 1 || c.filesMaxList < 1 {
		return c, fmt.Errorf("--files-max-bytes and --files-max-list must be at least 1")
	}
	if c.defaultSandbox, err = parseSandbox(*defaultSandbox); err != nil {
		return c, fmt.Errorf("--default-sandbox: %w", err)
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.allowedHosts = append(c.allowedHosts, h)
		}
	}
	if c.token, err = readToken(*tokenFile, getenv("SNAPEXEC_TOKEN")); err != nil {
		return c, err
	}
	for _, addr := range c.addrs {
		if c.token == "" && !loopbackAddr(addr) {
			return c, fmt.Errorf("refusing to listen on %s without a token: anyone who reaches that address could run commands; "+
				"set one with --token-file FILE (or SNAPEXEC_TOKEN_FILE, or SNAPEXEC_TOKEN), or listen on 127.0.0.1", addr)
		}
	}
	switch c.logFormat {
	case "json", "console":
	default:
		return c, fmt.Errorf("--log-format must be json or console, not %q", c.logFormat)
	}
	if c.grace <= 0 {
		return c, fmt.Errorf("--grace must be positive")
	}
	if c.retention <= 0 {
		// 0 or less would mean the manager's default (30 s), not none.
		return c, fmt.Errorf("--retention must be positive")
	}
	if c.sessions.IdleTimeout <= 0 {
		return c, fmt.Errorf("--session-idle-timeout must be positive")
	}
	if c.captureTimeout <= 0 {
		return c, fmt.Errorf("--capture-timeout must be positive")
	}
	if c.standbyShells < 0 || c.standbyIdle <= 0 || c.standbyLaunch < 1 || c.standbyFills < 1 {
		return c, fmt.Errorf("--standby-shells must not be negative, --standby-idle must be positive, and --standby-per-launch and --standby-fills at least 1")
	}
	if c.bodyTimeout <= 0 || c.idleTimeout <= 0 || c.maxConns < 1 {
		return c, fmt.Errorf("--body-timeout and --idle-timeout must be positive and --max-connections at least 1")
	}
	return c, nil
}

// parseSandbox reads a sandbox given as the API's JSON object; "" is none.
// Unknown fields are refused: a misspelt one would silently confine less.
func parseSandbox(s string) (sandbox.Policy, error) {
	if strings.TrimSpace(s) == "" {
		return sandbox.Policy{}, nil
	}
	var v struct {
		WritableRoots []string `json:"writableRoots"`
		ReadOnly      bool     `json:"readOnly"`
		Network       string   `json:"network"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return sandbox.Policy{}, err
	}
	if dec.More() {
		return sandbox.Policy{}, errors.New("more than one JSON value")
	}
	p := sandbox.Policy{WritableRoots: v.WritableRoots, ReadOnly: v.ReadOnly, Network: sandbox.Network(v.Network)}
	return p, p.Validate()
}

// intEnv reads an integer from the environment variable name, or def when it
// is unset.
func intEnv(name string, getenv func(string) string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

// defaultMaxConns is 512 connections, or half the open-file limit when that
// is lower: the other half is for children's pipes, snapshots and standbys. A
// cap above the limit would bring back what it is for: accept failing with
// EMFILE, and an authorised client waiting behind idle connections. A
// connection kept alive after a request costs the server about 22 KiB
// (measured: 1,000 of them took its RSS from 24 to 46 MiB), so 512 of them
// stay within the 64 MiB the server is meant to need.
func defaultMaxConns() int {
	const most = 512
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur/2 >= most {
		return most
	}
	return max(int(lim.Cur/2), 1)
}

// minTokenBytes keeps guessable tokens out.
const minTokenBytes = 16

// readToken returns the token from file (trimmed), else value; a file that
// cannot be read, or a short token, is an error.
func readToken(file, value string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		value = string(b)
	}
	value = strings.TrimSpace(value)
	if value != "" && len(value) < minTokenBytes {
		return "", fmt.Errorf("the token must be at least %d bytes; generate one with: head -c 32 /dev/urandom | base64", minTokenBytes)
	}
	return value, nil
}

// loopbackAddr reports whether addr listens only on a loopback interface,
// or on a Unix socket, which only this host's processes reach (and only the
// server's user: listen makes it 0600).
func loopbackAddr(addr string) bool {
	if strings.HasPrefix(addr, unixPrefix) {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return handlers.IsLoopbackHost(host)
}
