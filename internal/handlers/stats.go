package handlers

import (
	"context"
	"time"

	"github.com/snapexec/snapexec/internal/shellsnap"
)

// GetStats is the dashboard's summary.
func (s *Server) GetStats(context.Context, GetStatsRequestObject) (GetStatsResponseObject, error) {
	st := s.stats.Stats()
	sn := st.Snapshots
	out := GetStats200JSONResponse{
		Version:   s.version,
		StartedAt: st.StartedAt.UTC(),
		UptimeMs:  time.Since(st.StartedAt).Milliseconds(),
		Snapshots: SnapshotStats{
			Capacity:       sn.Capacity,
			Cached:         sn.Cached,
			Captures:       CaptureCounts{Success: sn.Success, Failure: sn.Failure},
			RecentCaptures: make([]CaptureSample, len(sn.Recent)),
			Commands:       map[string]OutcomeCounts{},
			Standby: StandbyStats{
				Max: st.Standby.Max, Idle: st.Standby.Idle,
				Hit: st.Standby.Hit, Miss: st.Standby.Miss, Unfit: st.Standby.Unfit,
			},
			CaptureLatencyMs: Quantiles{
				Count: int64(len(sn.Recent)),
			},
		},
		Processes: ProcessStats{
			Running:  st.Running,
			Finished: FinishedCounts{Success: st.Success, Error: st.Error, Terminated: st.Terminated},
			Escaped:  st.Escaped,
		},
		Sessions: SessionStats{
			Active: st.Sessions.Active, Busy: st.Sessions.Busy, Commands: st.Sessions.Commands,
			StateLost: st.Sessions.StateLost, Deleted: st.Sessions.Deleted, Idle: st.Sessions.Idle,
		},
		Http: HTTPStats{Requests: s.http.requests.Load(), Errors: s.http.errors.Load()},
	}
	if len(sn.Recent) > 0 {
		out.Snapshots.CaptureLatencyMs.P50 = msPtr(sn.P50)
		out.Snapshots.CaptureLatencyMs.P90 = msPtr(sn.P90)
		out.Snapshots.CaptureLatencyMs.P99 = msPtr(sn.P99)
	}
	for i, r := range sn.Recent {
		out.Snapshots.RecentCaptures[i] = CaptureSample{At: r.At.UTC(), Ms: ms(r.Duration), Success: r.Success}
	}
	for state, byOutcome := range sn.Commands {
		out.Snapshots.Commands[string(state)] = OutcomeCounts{Used: byOutcome[shellsnap.OutcomeUsed], Fallback: byOutcome[shellsnap.OutcomeFallback]}
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msPtr(d time.Duration) *float64 {
	v := ms(d)
	return &v
}
