package handlers

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/api"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/shellsnap"
	"github.com/snapexec/snapexec/internal/shellsnap/standby"
)

// TestStatsAndProbes: /stats as the dashboard reads it, the probes, and the
// contract served as committed.
func TestStatsAndProbes(t *testing.T) {
	started := time.Now().Add(-time.Minute)
	stats := func(recent int) func() *fakeService {
		return func() *fakeService {
			sn := shellsnap.Stats{Capacity: 64, Cached: 2, Success: 3, Failure: 1,
				Commands: map[shellsnap.State]map[shellsnap.Outcome]int64{shellsnap.StateCacheHit: {shellsnap.OutcomeUsed: 5, shellsnap.OutcomeFallback: 1}}}
			if recent > 0 {
				sn.Recent = []shellsnap.CaptureSample{{At: started, Duration: 20 * time.Millisecond, Success: true}}
				sn.P50, sn.P90, sn.P99 = 20*time.Millisecond, 30*time.Millisecond, 40*time.Millisecond
			}
			return &fakeService{StatsFn: func() service.Stats {
				return service.Stats{StartedAt: started, Snapshots: sn, Standby: standby.Stats{Max: 4, Idle: 1, Hit: 2, Miss: 3, Unfit: 1},
					Running: 2, Success: 7, Error: 1, Terminated: 3, Escaped: 1}
			}}
		}
	}
	runHandlerCases(t, []handlerCase{
		{name: "stats", method: "GET", target: "/stats", svc: stats(1), status: 200, calls: []string{"Stats"},
			want: `{"version":"test","snapshots":{"capacity":64,"cached":2,"captures":{"success":3,"failure":1},
				"recentCaptures":[{"ms":20,"success":true}],"commands":{"cache_hit":{"used":5,"fallback":1}},
				"standby":{"max":4,"idle":1,"hit":2,"miss":3,"unfit":1},
				"captureLatencyMs":{"count":1,"p50":20,"p90":30,"p99":40}},
				"processes":{"running":2,"finished":{"success":7,"error":1,"terminated":3},"escaped":1}}`,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if !strings.Contains(rec.Body.String(), `"uptimeMs":6`) {
					t.Errorf("GET /stats = %s, want an uptime of about a minute", rec.Body)
				}
			}},
		{name: "stats before any capture", method: "GET", target: "/stats", svc: stats(0), status: 200, calls: []string{"Stats"},
			want: `{"snapshots":{"recentCaptures":[],"captureLatencyMs":{"count":0}}}`,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if strings.Contains(rec.Body.String(), `"p50"`) {
					t.Errorf("GET /stats = %s gives quantiles of no sample", rec.Body)
				}
			}},
		{name: "healthz", method: "GET", target: "/healthz", svc: okExecutor, status: 200, want: `{"status":"ok","version":"test"}`},
		{name: "readyz", method: "GET", target: "/readyz", svc: okExecutor, status: 200, want: `{"status":"ok","version":"test"}`},
		{name: "contract", method: "GET", target: "/openapi.yaml", svc: okExecutor, status: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if rec.Body.String() != string(api.Spec) || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/yaml") {
					t.Errorf("GET /openapi.yaml = %s, %d bytes, want the committed contract", rec.Header().Get("Content-Type"), rec.Body.Len())
				}
			}},
	})
}
