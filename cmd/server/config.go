package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// config is everything the server can be told at start.
type config struct {
	addr           string
	logLevel       string
	logFormat      string
	grace          time.Duration
	defaultTimeout time.Duration
	maxTimeout     time.Duration
	maxOutputBytes int
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
	fs.StringVar(&c.addr, "addr", env("SNAPEXEC_ADDR", "127.0.0.1:8080"), "listen address (SNAPEXEC_ADDR)")
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
	}
	for _, d := range durations {
		def, err := time.ParseDuration(env(d.env, d.def))
		if err != nil {
			return c, fmt.Errorf("%s: %w", d.env, err)
		}
		fs.DurationVar(d.p, d.name, def, d.help+" ("+d.env+")")
	}
	fs.IntVar(&c.maxOutputBytes, "max-output-bytes", 1<<20, "bytes of each stream kept in an /exec response")
	if err := fs.Parse(args[1:]); err != nil {
		return c, err
	}
	switch c.logFormat {
	case "json", "console":
	default:
		return c, fmt.Errorf("--log-format must be json or console, not %q", c.logFormat)
	}
	if c.grace <= 0 {
		return c, fmt.Errorf("--grace must be positive")
	}
	return c, nil
}
