package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/api"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/handlers"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
	"github.com/snapexec/snapexec/web"
)

// version is the server's version, reported by /stats and the dashboard.
const version = "0.1.0"

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MiB): a
// connection that has not yet sent its token may hold that much, at most
// --max-connections of them.
const maxHeaderBytes = 32 << 10

// run is the whole server: it parses its configuration, serves until ctx ends
// or SIGINT/SIGTERM arrives, then drains and returns.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if getenv(exec.KeeperEnv) != "" {
		// This binary, re-run by a server as its keeper (exec.StartKeeper).
		return exec.RunKeeper(stdin)
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// getenv cannot list variables, and an envPolicy inherits from all of them:
	// the server's environment is read whole, once, here.
	serverEnv := os.Environ()
	logger, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	// The keeper kills what the server started if the server dies without
	// ending it (SIGKILL, a crash); closed last, once everything has ended.
	keeper, err := exec.StartKeeper(func(err error) {
		logger.Error().Err(err).Msg("the keeper is gone: processes may outlive a crash of the server")
	})
	if err != nil {
		logger.Warn().Err(err).Msg("cannot start the keeper: processes may outlive a crash of the server")
	}
	defer func() {
		if err := keeper.Close(); err != nil {
			logger.Warn().Err(err).Msg("the keeper did not stop")
		}
	}()
	reapCtx, stopReaping := context.WithCancel(context.Background())
	defer stopReaping()
	reaper, err := exec.NewReaper(reapCtx, exec.ReaperOptions{Keeper: keeper, OnEscape: func(e exec.Escape) {
		ev := logger.Warn().Int("pid", e.Pid).Str("program", e.Program)
		if e.Group != 0 {
			ev = ev.Int("processGroup", e.Group)
		}
		ev.Msg("a process left its process group; it is ended at shutdown at the latest")
	}})
	if err != nil {
		logger.Warn().Err(err).Msg("cannot become a child subreaper; orphaned grandchildren are left to PID 1")
	}

	tel, err := setupTelemetry(ctx, getenv)
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

	procs := exec.NewManager(exec.Options{
		Reaper:                 reaper,
		Grace:                  cfg.grace,
		MaxOutputBytes:         cfg.maxOutputBytes,
		Retention:              cfg.retention,
		MaxRunning:             cfg.limits.running,
		MaxRetained:            cfg.limits.retained,
		MaxRetainedOutputBytes: cfg.limits.retainedBytes,
	})
	snapshots, err := shellsnap.New(shellsnap.Options{Capture: shellsnap.NewCapturer(procs), Meter: tel.meter(), Tracer: tel.tracer(), Timeout: cfg.captureTimeout, MaxConcurrentCaptures: cfg.limits.captures})
	if err != nil {
		return err
	}
	svc, err := service.New(service.Options{
		Procs: procs, Snapshots: snapshots, ServerEnv: serverEnv,
		Standby: standby.Options{Max: cfg.standbyShells, Idle: cfg.standbyIdle},
		Meter:   tel.meter(), Tracer: tel.tracer(),
	})
	if err != nil {
		return err
	}
	srv := handlers.New(handlers.Deps{Exec: svc, Processes: svc, Snapshots: svc, Stats: svc, Gate: svc}, handlers.Limits{
		DefaultTimeout: cfg.defaultTimeout,
		MaxTimeout:     cfg.maxTimeout,
		MaxArgs:        cfg.limits.args,
		MaxArgBytes:    cfg.limits.argBytes,
		MaxEnv:         cfg.limits.env,
		MaxEnvBytes:    cfg.limits.envBytes,
		MaxStdinBytes:  cfg.limits.stdinBytes,
		MaxOutputBytes: cfg.maxOutputBytes,
	}, api.Spec, version)
	router, err := handlers.NewRouter(srv, logger, handlers.RouterOptions{
		MeterProvider:  tel.meterProvider,
		TracerProvider: tel.tracerProvider,
		Propagator:     tel.propagator,
		Metrics:        tel.metrics,
		Dashboard:      web.Handler,
		Security: handlers.Security{
			Token:        cfg.token,
			AllowedHosts: cfg.allowedHosts,
			MaxBodyBytes: cfg.limits.bodyBytes,
		},
		BodyTimeout: cfg.bodyTimeout,
	})
	if err != nil {
		return err
	}
	conns, err := handlers.NewConnLimit(cfg.maxConns, tel.meter())
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	// No ReadTimeout or WriteTimeout: they would cut event streams, long
	// polls and long commands. A body's deadline is per request (BodyTimeout);
	// headers have theirs, and idle connections are closed.
	httpServer := &http.Server{
		Handler:           router,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		IdleTimeout:       cfg.idleTimeout,
		ConnContext:       conns.ConnContext,
		ConnState:         conns.ConnState,
		BaseContext:       func(net.Listener) context.Context { return logger.WithContext(context.Background()) },
	}
	fmt.Fprintf(stdout, "snapexec listening on http://%s\n", ln.Addr())
	logger.Info().Str("addr", ln.Addr().String()).Bool("tokenRequired", cfg.token != "").Msg("listening")

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}

	// Shutdown: readiness turns 503 and new commands are refused; requests
	// waiting on a capture and running process groups end (their requests
	// answer status shutdown); then in-flight requests drain and the
	// listener closes.
	logger.Info().Msg("shutting down")
	procCtx, cancel := context.WithTimeout(context.Background(), 2*cfg.grace+time.Second)
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

func newLogger(cfg config, stderr io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(cfg.logLevel)
	if err != nil {
		return zerolog.Logger{}, fmt.Errorf("--log-level: %w", err)
	}
	out := stderr
	if cfg.logFormat == "console" {
		out = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.RFC3339}
	}
	return zerolog.New(out).Level(level).With().Timestamp().Logger(), nil
}
