package shellsnap

// The reference's own test, codex-rs/exec-server/src/shell_snapshot_tests.rs
// (snapshot_failure_retries_are_bounded_and_single_flight), ported case for
// case with a real /bin/bash, a fake backoff clock and an OpenTelemetry manual
// reader. The parse cases of the same file are in parse_test.go. The
// reference's codex.shell_snapshot and codex.shell_snapshot.duration_ms are
// snapexec.snapshot.captures and snapexec.snapshot.capture.duration here.

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/snapexec/snapexec/internal/sandbox"
)

// fakeClock is the backoff clock the test pauses and advances.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestSnapshotFailureRetriesAreBoundedAndSingleFlight(t *testing.T) {
	tests := []struct {
		name             string
		recoveryAttempt  int
		initialIsPrewarm bool
	}{
		{"succeeds_on_first_attempt", 1, false},
		{"recovers_on_second_attempt", 2, false},
		{"recovers_on_last_attempt", 3, false},
		{"stops_after_three_failures", 4, false},
		{"failed_prewarm_releases_waiting_command", 2, true},
		{"failed_prewarm_preserves_last_attempt", 3, true},
		{"failed_prewarm_preserves_retry_limit", 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snapshotFailureRetries(t, tt.recoveryAttempt, tt.initialIsPrewarm)
		})
	}
}

func snapshotFailureRetries(t *testing.T, recoveryAttempt int, prewarmFailsFirst bool) {
	home := t.TempDir()
	profile := filepath.Join(home, ".bashrc")
	writeFile(t, profile, "printf x >> \"$HOME/captures\"\nexit 7\n")
	argv := []string{"/bin/bash", "-lc", "true"}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	req := &Request{ScopeID: "attachment-1", Shell: Shell{Name: "bash", Path: "/bin/bash"}}
	launch := func() Launch {
		return Launch{Argv: clone(argv), Cwd: home, Env: cloneMap(env)}
	}

	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	// started tells the test that a capture began, so that the second
	// preparation starts only once the first holds the cell, as the
	// reference's biased join polls the first one first.
	started := make(chan struct{}, 16)
	capture := NewCapturer(newTestProcs(t))
	cache, err := New(Options{
		Now:   clock.Now,
		Meter: provider.Meter("test"),
		Capture: func(ctx context.Context, argv []string, cwd string, env map[string]string, sb sandbox.Policy, newSession bool) ([]byte, error) {
			started <- struct{}{}
			return capture(ctx, argv, cwd, env, sb, newSession)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Close)
	ctx := context.Background()

	for attempt := 1; attempt <= 5; attempt++ {
		if attempt == recoveryAttempt {
			writeFile(t, profile, "printf x >> \"$HOME/captures\"\nprofile_helper() { printf recovered; }\n")
		}
		first, second := launch(), launch()
		prewarming := prewarmFailsFirst && attempt == 1

		type answer struct {
			p   Prepared
			err error
		}
		firstDone := make(chan answer, 1)
		go func() {
			if prewarming {
				_, err := cache.Prewarm(ctx, *req, first)
				firstDone <- answer{err: err}
				return
			}
			p, err := cache.Prepare(ctx, req, first)
			firstDone <- answer{p, err}
		}()
		var a answer
		select {
		case <-started:
		case a = <-firstDone:
			firstDone <- a
		}
		pSecond, errSecond := cache.Prepare(ctx, req, second)
		a = <-firstDone
		errFirst := a.err
		drain(started)
		// The commands the two preparations start (a prewarm's is its launch
		// unchanged: it never replays).
		prepared, concurrent := command(req, first, a.p), command(req, second, pSecond)

		if prewarming {
			if errFirst == nil {
				t.Fatalf("attempt %d: prewarm must report failure without caching it", attempt)
			}
		} else if errFirst != nil {
			t.Fatalf("attempt %d: capture failure must preserve command fallback: %v", attempt, errFirst)
		}
		if errSecond != nil {
			t.Fatalf("attempt %d: waiting command must complete even when prewarm fails: %v", attempt, errSecond)
		}
		if !reflect.DeepEqual(prepared, concurrent) {
			t.Fatalf("attempt %d: concurrent preparations differ:\n%q %v\n%q %v", attempt, prepared.argv, prepared.env, concurrent.argv, concurrent.env)
		}

		// The clock is paused here: nothing moves it until Advance below.
		if attempt < recoveryAttempt || recoveryAttempt > MaxSnapshotAttempts {
			third := launch()
			p, err := cache.Prepare(ctx, req, third)
			if err != nil {
				t.Fatalf("attempt %d: capture must stay cached during backoff: %v", attempt, err)
			}
			if backoff := command(req, third, p); !reflect.DeepEqual(backoff.argv, argv) || !reflect.DeepEqual(backoff.env, env) {
				t.Fatalf("attempt %d: Prepare during backoff rewrote the command: %q %v", attempt, backoff.argv, backoff.env)
			}
		} else if reflect.DeepEqual(prepared.argv, argv) {
			t.Fatalf("attempt %d: command was not rewritten after a successful capture", attempt)
		}
		want := min(attempt, recoveryAttempt, MaxSnapshotAttempts)
		if prewarmFailsFirst {
			want++
		}
		got, _ := os.ReadFile(filepath.Join(home, "captures"))
		if string(got) != strings.Repeat("x", want) {
			t.Fatalf("attempt %d: captures = %q, want %d x", attempt, got, want)
		}
		clock.Advance(SnapshotRetryBackoff)
	}

	counters, durations := collectSnapshotMetrics(t, reader)
	failures := min(recoveryAttempt-1, MaxSnapshotAttempts)
	if prewarmFailsFirst {
		failures++
	}
	successes := 0
	if recoveryAttempt <= MaxSnapshotAttempts {
		successes = 1
	}
	wantCounters, wantDurations := map[string]int64{}, map[string]uint64{}
	if failures > 0 {
		wantCounters["failure_reason=capture_failed,success=false,version=v2"] = int64(failures)
		wantDurations["success=false,version=v2"] = uint64(failures)
	}
	if successes > 0 {
		wantCounters["success=true,version=v2"] = int64(successes)
		wantDurations["success=true,version=v2"] = uint64(successes)
	}
	if !reflect.DeepEqual(counters, wantCounters) || !reflect.DeepEqual(durations, wantDurations) {
		t.Errorf("metrics = %v %v, want %v %v", counters, durations, wantCounters, wantDurations)
	}
}

// collectSnapshotMetrics returns the snapexec.snapshot.captures counter values
// and the snapexec.snapshot.capture.duration histogram counts, by their
// sorted tags.
func collectSnapshotMetrics(t *testing.T, reader *sdkmetric.ManualReader) (map[string]int64, map[string]uint64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counters, durations := map[string]int64{}, map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "snapexec.snapshot.captures":
				sum, ok := m.Data.(metricdata.Sum[int64])
				if !ok {
					t.Fatalf("snapexec.snapshot.captures is %T, want an int64 counter", m.Data)
				}
				for _, p := range sum.DataPoints {
					counters[tags(p.Attributes.ToSlice())] = p.Value
				}
			case "snapexec.snapshot.capture.duration":
				h, ok := m.Data.(metricdata.Histogram[float64])
				if !ok {
					t.Fatalf("snapexec.snapshot.capture.duration is %T, want a float64 histogram", m.Data)
				}
				for _, p := range h.DataPoints {
					durations[tags(p.Attributes.ToSlice())] = p.Count
				}
			}
		}
	}
	return counters, durations
}

// tags renders an attribute set as sorted k=v pairs joined by commas.
func tags(kvs []attribute.KeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// launched is a command as a caller starts it.
type launched struct {
	argv []string
	env  map[string]string
}

// command is the command a caller starts for l after Prepare answered p.
func command(req *Request, l Launch, p Prepared) launched {
	argv, env := replayOf(req, l, p)
	return launched{argv, env}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func clone(s []string) []string { return append([]string(nil), s...) }

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// drain empties a buffered signal channel without blocking.
func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
