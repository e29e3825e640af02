package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/files"
	"github.com/snapexec/snapexec/internal/handlers"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// TestConfigOptions: every setting reaches the option of the package it is
// for, through the one mapping (config.options). Each flag gets a value of
// its own, so that two settings swapped or one dropped shows.
func TestConfigOptions(t *testing.T) {
	cfg, err := parseConfig([]string{"snapexec",
		"--grace", "3s", "--default-timeout", "4m", "--max-timeout", "5h", "--retention", "6s",
		"--standby-idle", "7s", "--body-timeout", "8s", "--idle-timeout", "9s", "--capture-timeout", "11s",
		"--allowed-hosts", "a.example, b.example", "--max-output-bytes", "12", "--max-args", "13",
		"--max-arg-bytes", "14", "--max-env", "15", "--max-env-bytes", "16", "--max-stdin-bytes", "17",
		"--max-running", "18", "--max-retained", "19", "--max-captures", "20", "--max-connections", "21",
		"--standby-shells", "22", "--standby-per-launch", "3", "--standby-fills", "2", "--max-body-bytes", "2300", "--max-retained-output-bytes", "24",
		"--files-root", "/r1", "--files-root", "/r2", "--files-max-bytes", "25", "--files-max-list", "26",
		"--default-sandbox", `{"writableRoots":["/w"],"network":"loopback"}`,
	}, func(k string) string { return map[string]string{"SNAPEXEC_TOKEN": "tok-0123456789abcdef"}[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.options()
	tests := []struct {
		name      string
		got, want any
	}{
		{"exec", got.exec, exec.Options{Grace: 3 * time.Second, MaxOutputBytes: 12, Retention: 6 * time.Second, MaxRunning: 18, MaxRetained: 19, MaxRetainedOutputBytes: 24}},
		{"snapshots", got.snapshots, shellsnap.Options{Timeout: 11 * time.Second, MaxConcurrentCaptures: 20}},
		{"service limits", got.service.Limits, service.Limits{
			DefaultTimeout: 4 * time.Minute, MaxTimeout: 5 * time.Hour, MaxArgs: 13, MaxArgBytes: 14,
			MaxEnv: 15, MaxEnvBytes: 16, MaxStdinBytes: 17, MaxOutputBytes: 12,
		}},
		{"standby", got.service.Standby, standby.Options{Max: 22, PerLaunch: 3, Fills: 2, Idle: 7 * time.Second}},
		{"default sandbox", got.service.DefaultSandbox, sandbox.Policy{WritableRoots: []string{"/w"}, Network: sandbox.NetworkLoopback}},
		{"files roots", got.filesRoots, []string{"/r1", "/r2"}},
		{"files", got.files, files.Options{MaxFileBytes: 25, MaxListEntries: 26}},
		{"router", got.router, handlers.RouterOptions{
			Security:    handlers.Security{Token: "tok-0123456789abcdef", AllowedHosts: []string{"a.example", "b.example"}, MaxBodyBytes: 2300, MaxUploadBytes: 25},
			BodyTimeout: 8 * time.Second,
		}},
		{"http idle timeout", got.http.IdleTimeout, 9 * time.Second},
		{"http header bytes", got.http.MaxHeaderBytes, maxHeaderBytes},
		{"connections", got.maxConns, 21},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("options().%s = %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}

// TestVersionFlag: --version prints the version and starts nothing, even
// with settings the server would refuse to start with.
func TestVersionFlag(t *testing.T) {
	var stdout strings.Builder
	err := run(context.Background(), []string{"snapexec", "--version", "--addr", "0.0.0.0:1"}, nil, strings.NewReader(""), &stdout, io.Discard)
	if err != nil || !strings.HasPrefix(stdout.String(), "snapexec server "+version) {
		t.Errorf("run --version = %v, stdout %q; want nil and %q", err, stdout.String(), "snapexec server "+version)
	}
}

// TestConsoleLogsColourOnlyOnATerminal: --log-format console colours a
// terminal, and writes no escape code into a file or under NO_COLOR.
func TestConsoleLogsColourOnlyOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name       string
		out        *os.File
		noColor    string
		wantColour bool
	}{
		{"terminal", tty, "", true},
		{"terminal, NO_COLOR", tty, "1", false},
		{"file", file, "", false},
	} {
		logger, err := newLogger(config{logLevel: "info", logFormat: "console"}, tc.out, func(k string) string {
			return map[string]string{"NO_COLOR": tc.noColor}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		logger.Info().Str("k", "v").Msg("hello")
		var got []byte
		if tc.out == tty {
			got = make([]byte, 4096)
			n, err := ptmx.Read(got)
			if err != nil {
				t.Fatal(err)
			}
			got = got[:n]
		} else if got, err = os.ReadFile(file.Name()); err != nil {
			t.Fatal(err)
		}
		if colour := bytes.Contains(got, []byte("\x1b[")); colour != tc.wantColour || !bytes.Contains(got, []byte("hello")) {
			t.Errorf("%s: console log %q; want colour %v", tc.name, got, tc.wantColour)
		}
	}
}

// TestConfigRefusesWhatWouldBeReplaced: a value the server would silently
// replace by its default (a retention of zero or less, no retained output
// at all) is refused at start, as --grace 0 is.
func TestConfigRefusesWhatWouldBeReplaced(t *testing.T) {
	for _, args := range [][]string{
		{"--retention", "0s"},
		{"--retention", "-1s"},
		{"--max-retained-output-bytes", "0"},
	} {
		if _, err := parseConfig(append([]string{"snapexec"}, args...), func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("parseConfig(%q) = nil, want it refused", args)
		}
	}
}
