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
	"github.com/snapexec/snapexec/web"
)

// version is the server's version, reported by /stats and the dashboard.
const version = "0.1.0"

// run is the whole server: it parses its configuration, serves until ctx ends
// or SIGINT/SIGTERM arrives, then drains and returns.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
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
	reapCtx, stopReaping := context.WithCancel(context.Background())
	defer stopReaping()
	reaper, err := exec.NewReaper(reapCtx)
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
	snapshots, err := shellsnap.New(shellsnap.Options{Meter: tel.meter(), Tracer: tel.tracer(), Timeout: cfg.captureTimeout, MaxConcurrentCaptures: cfg.limits.captures})
	if err != nil {
		return err
	}
	svc, err := service.New(service.Options{
		Procs: procs, Snapshots: snapshots, ServerEnv: serverEnv,
		Standby: service.StandbyOptions{Max: cfg.standbyShells, Idle: cfg.standbyIdle},
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
		Dashboard:      web.Handler(),
		Security: handlers.Security{
			Token:        cfg.token,
			AllowedHosts: cfg.allowedHosts,
			MaxBodyBytes: cfg.limits.bodyBytes,
		},
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	httpServer := &http.Server{
		Handler:           router,
		ReadHeaderTimeout: 10 * time.Second,
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
