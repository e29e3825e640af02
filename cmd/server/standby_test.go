package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The standby pool's behaviours are tested in internal/shellsnap/standby,
// against a real exec.Manager. Here: what HTTP shows of it.

// waitIdleStandbys waits until the server's /stats counts n idle standby
// shells: a launch's standby starts after its command.
func waitIdleStandbys(t *testing.T, srv *testServer, n int) {
	t.Helper()
	idle := -1
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if idle = idleStandbys(t, srv); idle == n || time.Now().After(deadline) {
			break
		}
	}
	if idle != n {
		t.Fatalf("idle standby shells per /stats: %d, want %d", idle, n)
	}
}

// idleStandbys is the server's count of idle standby shells.
func idleStandbys(t *testing.T, srv *testServer) int {
	t.Helper()
	_, body := srv.get(t, "/stats")
	var st struct {
		Snapshots struct {
			Standby struct{ Idle int }
		}
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("/stats: %v", err)
	}
	return st.Snapshots.Standby.Idle
}

func receiptOf(got map[string]any) map[string]any {
	r, _ := got["snapshot"].(map[string]any)
	return r
}

// TestStandbyReceiptStatsAndMetrics: a command that a standby ran says so
// in its receipt, and /stats and /metrics show the standby shells.
func TestStandbyReceiptStatsAndMetrics(t *testing.T) {
	s := startServer(t, nil)
	home := t.TempDir()
	writeTestFile(t, filepath.Join(home, ".bashrc"), "greet() { echo \"hello $1\"; }\n")
	const scope = "standby"

	for _, script := range []string{"greet a", "greet z"} {
		if code, got, _ := s.post(t, "/exec", snapshotBody(home, script, scope, "bash", "/bin/bash")); code != 200 || receiptOf(got)["standby"] != false {
			t.Fatalf("command of a launch without a standby = %d %v, want standby false", code, got)
		}
	}
	waitIdleStandbys(t, s, 1)
	code, got, _ := s.post(t, "/exec", snapshotBody(home, "greet b", scope, "bash", "/bin/bash"))
	if r := receiptOf(got); code != 200 || got["stdout"] != "hello b\n" || r["state"] != "cache_hit" || r["standby"] != true {
		t.Fatalf("command a standby ran = %d %v, want hello b on a cache hit, standby true", code, got)
	}
	waitIdleStandbys(t, s, 1)
	_, stats := s.get(t, "/stats")
	if !strings.Contains(string(stats), `"standby":{"hit":1,"idle":1,"max":8,"miss":2,"unfit":0}`) {
		t.Errorf("/stats = %s, want standby hit 1, idle 1 of 8, miss 2 (the capture and the repeat), unfit 0", stats)
	}
	_, metrics := s.get(t, "/metrics")
	if !strings.Contains(string(metrics), `snapexec_standby_commands_total{`) || !strings.Contains(string(metrics), `result="hit"`) || !strings.Contains(string(metrics), `snapexec_standby_idle`) {
		t.Errorf("/metrics lacks snapexec_standby_commands_total with result=\"hit\", or snapexec_standby_idle")
	}
}

func TestStandbyFlags(t *testing.T) {
	var stderr bytes.Buffer
	none := func(string) string { return "" }
	for _, args := range [][]string{{"--standby-shells", "-1"}, {"--standby-idle", "0s"}, {"--standby-per-launch", "0"}, {"--standby-fills", "0"}} {
		if _, err := parseConfig(append([]string{"snapexec"}, args...), none, &stderr); err == nil || !strings.Contains(err.Error(), "--standby") {
			t.Errorf("parseConfig(%q) error = %v, want a --standby refusal", args, err)
		}
	}
	c, err := parseConfig([]string{"snapexec"}, func(k string) string {
		if k == "SNAPEXEC_STANDBY_IDLE" {
			return "5s"
		}
		return ""
	}, &stderr)
	if err != nil || c.standbyShells != 8 || c.standbyIdle != 5*time.Second {
		t.Errorf("parseConfig defaults with SNAPEXEC_STANDBY_IDLE=5s = %d shells, idle %v, %v; want 8, 5s, nil", c.standbyShells, c.standbyIdle, err)
	}
}
