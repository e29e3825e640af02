package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/snapexec/snapexec/api"
	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/files"
	"github.com/snapexec/snapexec/internal/handlers"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/web"
)

// version is the server's version, reported by --version, /healthz, /stats,
// the dashboard and target_info's service_version.
const version = "0.1.0"

// run is the whole server: it parses its configuration from args and
// environ (the server's whole environment, NAME=VALUE, which an envPolicy
// also inherits from; the OTEL_* variables excepted, which the OpenTelemetry
// SDK reads from the process: setupTelemetry), serves until ctx ends or
// SIGINT/SIGTERM arrives, then drains and returns.
func run(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := envpolicy.FromList(environ)
	getenv := func(name string) string { return env[name] }
	if getenv(exec.KeeperEnv) != "" {
		// This binary, re-run by a server as its keeper (exec.StartKeeper),
		// with the directories to remove as its arguments.
		return exec.RunKeeper(stdin, args[1:])
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.printVersion {
		_, err := fmt.Fprintln(stdout, versionLine())
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger, err := newLogger(cfg, stderr, getenv)
	if err != nil {
		return err
	}
	// The shell state that commands run (restore files, sessions' files)
	// lives in directories of the server's own, which no sandboxed command
	// may write: removed once the snapshots and sessions are closed, or by
	// the keeper if the server dies first.
	private, err := shellsnap.NewPrivateDirs()
	if err != nil {
		return fmt.Errorf("the server's private directories: %w", err)
	}
	defer private.Remove()
	// The keeper kills what the server started if the server dies without
	// ending it (SIGKILL, a crash), and removes the private directories;
	// closed last, once everything has ended.
	keeper := startKeeper(logger, private.List())
	defer func() {
		if err := keeper.Close(); err != nil {
			logger.Warn().Err(err).Msg("the keeper did not stop")
		}
	}()
	reapCtx, stopReaping := context.WithCancel(context.Background())
	defer stopReaping()
	reaper := newReaper(reapCtx, keeper, logger)
	tel, err := setupTelemetry(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// Last, so that the spans of the shutdown itself are flushed too.
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.shutdown(flushCtx); err != nil {
			logger.Warn().Err(err).Msg("telemetry did not flush")
		}
	}()

	// The namespaces the sandbox keeps ready are released last, once every
	// process has ended.
	sb := sandbox.New(sandbox.Options{Private: private.List()})
	defer sb.Close()
	logSandbox(logger, sb.Support())
	if warning := defaultSandboxWarning(cfg.defaultSandbox, cfg.token != ""); warning != "" {
		logger.Warn().Msg(warning)
	}

	opts := cfg.options()
	opts.exec.Reaper, opts.exec.Sandbox = reaper, sb
	opts.snapshots.Private, opts.service.Sessions.Private = private, private
	if len(opts.filesRoots) > 0 {
		fsys, err := files.New(opts.filesRoots, opts.files)
		if err != nil {
			return fmt.Errorf("--files-root: %w", err)
		}
		defer fsys.Close()
		opts.openFiles = fsys
	}
	opts.service.ServerEnv = environ
	svc, httpServer, err := wire(opts, tel, logger)
	if err != nil {
		return err
	}
	lns, err := listenAll(cfg.addrs, logger)
	if err != nil {
		return err
	}
	// Every listener serves the one handler, so that limits, connection
	// counts and shutdown are the same whichever address a client uses.
	serveErr := make(chan error, len(lns))
	for _, ln := range lns {
		fmt.Fprintf(stdout, "snapexec listening on %s\n", listenURL(ln))
		logger.Info().Str("addr", listenURL(ln)).Bool("tokenRequired", cfg.token != "").Msg("listening")
		go func() { serveErr <- httpServer.Serve(ln) }()
	}
	select {
	case err := <-serveErr:
		// A listener failed: the others stop with the server.
		return errors.Join(err, drain(svc, reaper, httpServer, 2*cfg.grace+time.Second, logger))
	case <-ctx.Done():
	}
	return drain(svc, reaper, httpServer, 2*cfg.grace+time.Second, logger)
}

// wire builds the server from opts: the process manager, the snapshot
// cache, the service, and the HTTP surface over them.
func wire(opts options, tel *telemetry, logger zerolog.Logger) (*service.Service, *http.Server, error) {
	procs := exec.NewManager(opts.exec)
	opts.snapshots.Capture = shellsnap.NewCapturer(procs)
	opts.snapshots.Meter, opts.snapshots.Tracer = tel.meter(), tel.tracer()
	snapshots, err := shellsnap.New(opts.snapshots)
	if err != nil {
		return nil, nil, err
	}
	opts.service.Procs, opts.service.Snapshots = procs, snapshots
	opts.service.Meter, opts.service.Tracer = tel.meter(), tel.tracer()
	svc, err := service.New(opts.service)
	if err != nil {
		return nil, nil, err
	}
	opts.router.MeterProvider, opts.router.TracerProvider, opts.router.Propagator = tel.meterProvider, tel.tracerProvider, tel.propagator
	opts.router.Metrics, opts.router.Dashboard = tel.metrics, web.Handler
	srv := handlers.New(handlers.Deps{Exec: svc, Processes: svc, Snapshots: svc, Sessions: svc, Stats: svc, Gate: svc, Files: opts.openFiles}, api.Spec, version)
	router, err := handlers.NewRouter(srv, logger, opts.router)
	if err != nil {
		return nil, nil, err
	}
	conns, err := handlers.NewConnLimit(opts.maxConns, tel.meter())
	if err != nil {
		return nil, nil, err
	}
	httpServer := opts.http
	httpServer.Handler = router
	httpServer.ConnContext, httpServer.ConnState = conns.ConnContext, conns.ConnState
	httpServer.BaseContext = func(net.Listener) context.Context { return logger.WithContext(context.Background()) }
	return svc, httpServer, nil
}

// drain shuts the server down: readiness turns 503 and new commands are
// refused; requests waiting on a capture and running process groups end
// (their requests answer status shutdown), within grace; then in-flight
// requests drain and the listener closes.
func drain(svc *service.Service, reaper *exec.Reaper, httpServer *http.Server, grace time.Duration, logger zerolog.Logger) error {
	logger.Info().Msg("shutting down")
	procCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := svc.Shutdown(procCtx); err != nil {
		logger.Error().Err(err).Msg("processes outlived the shutdown grace")
	}
	if err := reaper.Shutdown(procCtx); err != nil {
		logger.Error().Err(err).Msg("processes that left their group outlived the shutdown")
	}
	// Every process has ended, so streams have sent their exit events and
	// long polls return; what can still hold Shutdown is a connection that
	// never sent a request (net/http gives those 5 s) or a stuck client.
	httpCtx, cancelHTTP := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelHTTP()
	if err := httpServer.Shutdown(httpCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn().Err(err).Msg("connections outlived the drain; closing them")
		if err := httpServer.Close(); err != nil {
			return fmt.Errorf("http close: %w", err)
		}
	}
	logger.Info().Msg("stopped")
	return nil
}

// startKeeper starts the keeper, which removes the directories private
// after the server, or logs why there is none (a nil Keeper does nothing).
func startKeeper(logger zerolog.Logger, private []string) *exec.Keeper {
	keeper, err := exec.StartKeeper(func(err error) {
		logger.Error().Err(err).Msg("the keeper is gone: processes may outlive a crash of the server")
	}, private)
	if err != nil {
		logger.Warn().Err(err).Msg("cannot start the keeper: processes may outlive a crash of the server")
	}
	return keeper
}

// newReaper makes the server the child subreaper, or logs why it is not (a
// nil Reaper does nothing).
func newReaper(ctx context.Context, keeper *exec.Keeper, logger zerolog.Logger) *exec.Reaper {
	reaper, err := exec.NewReaper(ctx, exec.ReaperOptions{Keeper: keeper, OnEscape: func(e exec.Escape) {
		ev := logger.Warn().Int("pid", e.Pid).Str("program", e.Program)
		if e.Group != 0 {
			ev = ev.Int("processGroup", e.Group)
		}
		ev.Msg("a process left its process group; it is ended at shutdown at the latest")
	}})
	if err != nil {
		logger.Warn().Err(err).Msg("cannot become a child subreaper; orphaned grandchildren are left to PID 1")
	}
	return reaper
}

// logSandbox says at start what sandboxes this server can enforce.
func logSandbox(logger zerolog.Logger, sup sandbox.Support) {
	ev := logger.Info().Int("landlockABI", sup.LandlockABI)
	if sup.NetnsErr != nil {
		ev = ev.Str("networkNamespaces", sup.NetnsErr.Error())
	}
	if sup.CapsErr != nil {
		ev = ev.Str("capabilities", sup.CapsErr.Error())
	}
	if sup.IPCErr != nil {
		ev = ev.Str("ipcNamespace", sup.IPCErr.Error()+": a sandboxed command shares this host's System V IPC and POSIX message queues")
	}
	if sup.MountErr != nil {
		ev = ev.Str("readOnlyMounts", sup.MountErr.Error()+": Landlock alone confines the filesystem, and a sandboxed command may change the metadata of files outside its roots that this server's user owns")
	} else if sup.DevptsErr != nil {
		ev = ev.Str("devpts", sup.DevptsErr.Error()+": a sandboxed command sees this host's /dev/pts, and may open the host's other terminals that their modes allow")
	}
	ev.Msg("sandbox support")
}

// defaultSandboxWarning is what the server says at start of a default
// sandbox that leaves its own API in reach: with the network full and no
// token, a confined command can ask this server for a command without the
// sandbox (docs/SANDBOX.md, what is not guaranteed). "" for none.
func defaultSandboxWarning(p sandbox.Policy, token bool) string {
	if p.IsZero() || token || (p.Network != "" && p.Network != sandbox.NetworkFull) {
		return ""
	}
	return "the default sandbox leaves the network full and the server has no token: a sandboxed command can reach this server's API and run a command without the sandbox; give it network none or loopback, or set SNAPEXEC_TOKEN"
}

func newLogger(cfg config, stderr io.Writer, getenv func(string) string) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(cfg.logLevel)
	if err != nil {
		return zerolog.Logger{}, fmt.Errorf("--log-level: %w", err)
	}
	out := stderr
	if cfg.logFormat == "console" {
		out = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.RFC3339, NoColor: !colour(stderr, getenv)}
	}
	return zerolog.New(out).Level(level).With().Timestamp().Logger(), nil
}

// colour says whether console logs may be coloured: only on a terminal (a
// file or a pipe would keep the escape codes), and not when NO_COLOR is set
// (no-color.org).
func colour(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// versionLine is what --version prints: the version, and the VCS revision
// the binary was built from when the build recorded one.
func versionLine() string {
	line := "snapexec server " + version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			modified = ", modified"
		}
	}
	if rev != "" {
		line += " (" + rev + modified + ")"
	}
	return line
}
