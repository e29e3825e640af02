package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// results is everything a run measured; bench.json is its encoding.
type results struct {
	Machine      machine       `json:"machine"`
	Profile      string        `json:"profile"`
	Rounds       int           `json:"rounds"`
	FirstRuns    int           `json:"firstRuns"`
	Latency      []summary     `json:"latency"`
	FirstCapture []summary     `json:"firstCapture"`
	Terminal     []summary     `json:"terminal"`
	Throughput   []level       `json:"throughput"`
	Memory       memoryFigures `json:"memory"`
	Budget       budgetFigures `json:"budget"`
	Files        filesFigures  `json:"files"`
	Figures      []figure      `json:"figures"`
	// Hop says the run measured only the hop (-hop).
	Hop bool `json:"hop,omitempty"`
	// Zsh says the run measured only the zsh row (-zsh).
	Zsh bool `json:"zsh,omitempty"`
	// FilesOnly says the run measured only the files rows (-files).
	FilesOnly bool `json:"filesOnly,omitempty"`
	// Session says the run measured only the session row (-session).
	Session bool `json:"session,omitempty"`
}

// summary is one mode's samples, in ms of client wall time.
type summary struct {
	Key      string  `json:"key"`
	Label    string  `json:"label"`
	Direct   bool    `json:"direct"`
	N        int     `json:"n"`
	MedianMs float64 `json:"medianMs"`
	P90Ms    float64 `json:"p90Ms"`
	MinMs    float64 `json:"minMs"`
	MaxMs    float64 `json:"maxMs"`
	MeanMs   float64 `json:"meanMs"`
	// ServerMedianMs and WaitMedianMs are the medians of the server's own
	// durationMs (the child's run, whole ms) and snapshot waitMs, through the server only.
	ServerMedianMs *float64 `json:"serverDurationMedianMs,omitempty"`
	WaitMedianMs   *float64 `json:"snapshotWaitMedianMs,omitempty"`
	// Standby counts the samples a standby shell ran.
	Standby   int       `json:"standbySamples"`
	SamplesMs []float64 `json:"samplesMs"`
}

// level is the throughput of one concurrency.
type level struct {
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	ServerRPS   float64 `json:"serverRps"`
	DirectRPS   float64 `json:"directRps"`
	Ratio       float64 `json:"ratio"`
	// ServerCPUPerReqMs is the server's own CPU time per /exec, its
	// children's excluded (/proc counts it in 10 ms ticks, over all the
	// requests); BenchCPUPerSpawnMs the bench's per direct spawn.
	ServerCPUPerReqMs  float64 `json:"serverCpuPerRequestMs"`
	BenchCPUPerSpawnMs float64 `json:"benchCpuPerSpawnMs"`
}

// memoryFigures is the server's resident memory, idle and with a full cache.
type memoryFigures struct {
	IdleRSSMiB          float64 `json:"idleRssMiB"`
	FullRSSMiB          float64 `json:"fullRssMiB"`
	PeakHWMMiB          float64 `json:"peakHwmMiB"`
	Snapshots           int     `json:"snapshots"`
	MinStateBytes       int     `json:"minStateBytes"`
	FunctionsPerProfile int     `json:"functionsPerProfile"`
	DeclareBytes        int     `json:"declareBytes"`
	// StandbyShells idle after the full snapshots' commands, and their
	// resident memory together (processes of their own, not the server's).
	StandbyShells int     `json:"standbyShells"`
	StandbyRSSMiB float64 `json:"standbyRssMiB"`
}

// figure is one line of the verdict table; Pass is nil without a target.
type figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	Pass   *bool   `json:"pass,omitempty"`
}

// machine describes where the run happened.
type machine struct {
	NProc       int     `json:"nproc"`
	CPU         string  `json:"cpu"`
	MemTotalGiB float64 `json:"memTotalGiB"`
	Kernel      string  `json:"kernel"`
	GoVersion   string  `json:"goVersion"`
	Bash        string  `json:"bash"`
	Date        string  `json:"date"`
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute averages at the start:
	// other work on the machine shows in the figures.
	LoadAvg string `json:"loadAvg"`
}

// String describes the machine in one line.
func (m machine) String() string {
	return fmt.Sprintf("%d CPUs (%s), %.0f GiB, Linux %s, %s, bash %s, load %s, %s",
		m.NProc, m.CPU, m.MemTotalGiB, m.Kernel, m.GoVersion, m.Bash, m.LoadAvg, m.Date)
}

// summarize reduces a mode's samples.
func summarize(m mode, ss []sample) summary {
	s := summary{Key: m.key, Label: m.label, Direct: m.direct, N: len(ss)}
	var wall, dur, wait []float64
	for _, x := range ss {
		if x.standby {
			s.Standby++
		}
		wall = append(wall, round3(x.wallMs))
		dur = append(dur, x.durationMs)
		wait = append(wait, x.waitMs)
	}
	s.SamplesMs = slices.Clone(wall)
	slices.Sort(wall)
	s.MedianMs, s.P90Ms = round3(quantile(wall, 0.5)), round3(quantile(wall, 0.9))
	s.MinMs, s.MaxMs = wall[0], wall[len(wall)-1]
	var sum float64
	for _, x := range wall {
		sum += x
	}
	s.MeanMs = round3(sum / float64(len(wall)))
	if !m.direct {
		slices.Sort(dur)
		slices.Sort(wait)
		s.ServerMedianMs = new(round3(quantile(dur, 0.5)))
		s.WaitMedianMs = new(round3(quantile(wait, 0.5)))
	}
	return s
}

// quantile is the q-quantile of sorted xs, interpolated between the nearest ranks.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// check is a figure with a target: op is <, ≤ or ≥.
func check(name string, v float64, unit, op string, limit float64) figure {
	ok := (op == "<" && v < limit) || (op == "≤" && v <= limit) || (op == "≥" && v >= limit)
	return figure{Name: name, Value: round3(v), Unit: unit, Target: fmt.Sprintf("%s %g", op, limit), Pass: &ok}
}

// figures derives the ratios and verdicts from the measurements.
func (r *results) figures() []figure {
	med := map[string]float64{}
	for _, s := range slices.Concat(r.Latency, r.FirstCapture, r.Terminal) {
		med[s.Key] = s.MedianMs
	}
	if r.Hop {
		return append(append([]figure{
			check("/exec true ÷ direct true", med["exectrue"]/med["true"], "×", "≤", 1.3),
			check("/exec true, Unix socket ÷ direct true", med["unixtrue"]/med["true"], "×", "≤", 1.15),
		}, r.throughputFigures()...), check("server RSS idle", r.Memory.IdleRSSMiB, "MiB", "<", 30))
	}
	zsh := []figure{
		check("warm zsh ÷ direct zsh -c", med["zsh"]/med["zshc"], "×", "≤", 1.0),
		{Name: "warm zsh, no standby ÷ direct zsh -c", Value: round3(med["zshfresh"] / med["zshc"]), Unit: "×"},
	}
	if r.Zsh {
		return zsh
	}
	if r.FilesOnly {
		return r.filesFigures()
	}
	session := []figure{
		check("session command ÷ warm", med["session"]/med["warm"], "×", "≤", 1.5),
		check("no snapshot ÷ session command", med["nosnap"]/med["session"], "×", "≥", 20),
		{Name: "session command ÷ warm, no standby", Value: round3(med["session"] / med["fresh"]), Unit: "×"},
	}
	if r.Session {
		return session
	}
	f := []figure{
		check("warm, standby ÷ direct bash -c", med["warm"]/med["bashc"], "×", "≤", 0.8),
		check("warm, back to back ÷ direct bash -c", med["burst"]/med["bashc"], "×", "≤", 1.0),
		check("warm, env differs ÷ direct bash -c", med["envdiff"]/med["bashc"], "×", "≤", 1.0),
		check("warm, cwd differs ÷ direct bash -c", med["cwd"]/med["bashc"], "×", "≤", 1.0),
		zsh[0],
		check("/exec true ÷ direct true", med["exectrue"]/med["true"], "×", "≤", 1.3),
		check("/exec true, Unix socket ÷ direct true", med["unixtrue"]/med["true"], "×", "≤", 1.15),
		zsh[1],
		check("no snapshot ÷ warm", med["nosnap"]/med["warm"], "×", "≥", 40),
		session[0],
		session[1],
		session[2],
		{Name: "prewarmed ÷ direct bash -c", Value: round3(med["prewarmed"] / med["bashc"]), Unit: "×"},
		{Name: "warm, no standby ÷ direct bash -c", Value: round3(med["fresh"] / med["bashc"]), Unit: "×"},
		{Name: "no snapshot ÷ warm, no standby", Value: round3(med["nosnap"] / med["fresh"]), Unit: "×"},
		{Name: "warm 'cat /dev/null' ÷ direct bash -c 'cat /dev/null'", Value: round3(med["warmcat"] / med["bashcat"]), Unit: "×"},
		{Name: "first capture ÷ plain login", Value: round3(med["first"] / med["login"]), Unit: "×"},
		check("sandbox cost, /exec true (median, sandboxed − plain)", med["sbtrue"]-med["exectrue"], "ms", "≤", 0.5),
		check("sandbox cost, warm snapshot (median, sandboxed − plain)", med["sbwarm"]-med["warm"], "ms", "≤", 0.5),
		check("keystroke round trip: attach WebSocket ÷ own pty", med["keyws"]/med["keypty"], "×", "≤", 2),
		check("keystroke round trip: attach WebSocket, Unix socket ÷ own pty", med["keywsunix"]/med["keypty"], "×", "≤", 2),
		{Name: "keystroke round trip: bare WebSocket relay ÷ own pty", Value: round3(med["keyrelay"] / med["keypty"]), Unit: "×"},
		{Name: "keystroke round trip: attach WebSocket ÷ bare relay", Value: round3(med["keyws"] / med["keyrelay"]), Unit: "×"},
		check("first prompt: real login terminal ÷ snapshot login terminal", med["promptlogin"]/med["promptsnap"], "×", "≥", 20),
	}
	f = append(f, r.filesFigures()...)
	f = append(f, r.throughputFigures()...)
	bu := r.Budget
	f = append(f,
		figure{Name: "CPU per warm command, server and all its shells", Value: bu.WarmCPUMs, Unit: "ms"},
		figure{Name: "CPU per warm command, the server alone", Value: bu.WarmServerCPUMs, Unit: "ms"},
		figure{Name: "CPU per direct bash -c, bench and child", Value: bu.DirectCPUMs, Unit: "ms"},
		check("CPU per warm command ÷ direct bash -c", bu.WarmCPUMs/bu.DirectCPUMs, "×", "≤", 1.5),
		check(fmt.Sprintf("CPU of the idle server and its %d waiting standbys, per s", bu.IdleStandbys), bu.IdleCPUMsPerS, "ms", "≤", 0.1),
	)
	m := r.Memory
	return append(f,
		check("server RSS idle", m.IdleRSSMiB, "MiB", "<", 30),
		check(fmt.Sprintf("server RSS, %d full snapshots", m.Snapshots), m.FullRSSMiB, "MiB", "<", 64),
		check("server peak RSS (VmHWM)", m.PeakHWMMiB, "MiB", "<", 64),
		figure{Name: fmt.Sprintf("RSS of the %d idle standby shells, full snapshots", m.StandbyShells), Value: m.StandbyRSSMiB, Unit: "MiB"})
}

// filesFigures are the files API's throughput figures.
func (r *results) filesFigures() []figure {
	fl := r.Files
	return []figure{
		{Name: fmt.Sprintf("GET /files/content, %d MiB", fl.SizeMiB), Value: fl.ReadMBps, Unit: "MB/s"},
		{Name: fmt.Sprintf("cat, %d MiB", fl.SizeMiB), Value: fl.CatMBps, Unit: "MB/s"},
		check("files read ÷ cat", fl.ReadMBps/fl.CatMBps, "×", "≥", 0.7),
		{Name: fmt.Sprintf("PUT /files/content (fsync'ed), %d MiB", fl.SizeMiB), Value: fl.WriteMBps, Unit: "MB/s"},
		{Name: fmt.Sprintf("cp, %d MiB", fl.SizeMiB), Value: fl.CpMBps, Unit: "MB/s"},
		{Name: fmt.Sprintf("cp && sync FILE, %d MiB", fl.SizeMiB), Value: fl.CpSyncMBps, Unit: "MB/s"},
		check("files write ÷ cp", fl.WriteMBps/fl.CpMBps, "×", "≥", 0.7),
		{Name: "files write ÷ cp && sync FILE", Value: round3(fl.WriteMBps / fl.CpSyncMBps), Unit: "×"},
	}
}

// throughputFigures are the throughput's figures, each concurrency's.
func (r *results) throughputFigures() []figure {
	var f []figure
	for _, l := range r.Throughput {
		name := fmt.Sprintf("throughput /exec true ÷ direct, c=%d", l.Concurrency)
		ratio := figure{Name: name, Value: round3(l.Ratio), Unit: "×"}
		if l.Concurrency == 16 {
			ratio = check(name, l.Ratio, "×", "≥", 0.7)
		}
		f = append(f,
			figure{Name: fmt.Sprintf("/exec true, c=%d", l.Concurrency), Value: math.Round(l.ServerRPS), Unit: "req/s"},
			figure{Name: fmt.Sprintf("direct /bin/true, c=%d", l.Concurrency), Value: math.Round(l.DirectRPS), Unit: "req/s"},
			ratio,
			figure{Name: fmt.Sprintf("server CPU per /exec true, c=%d", l.Concurrency), Value: l.ServerCPUPerReqMs, Unit: "ms"},
			figure{Name: fmt.Sprintf("bench CPU per direct spawn, c=%d", l.Concurrency), Value: l.BenchCPUPerSpawnMs, Unit: "ms"})
	}
	return f
}

// printReport writes the latency table and the verdict table.
func printReport(w io.Writer, r *results) {
	m := r.Machine
	fmt.Fprintf(w, "\nsnapexec benchmark: %s\n", m)
	if rows := slices.Concat(r.Latency, r.FirstCapture, r.Terminal); len(rows) > 0 {
		// -files measures none.
		fmt.Fprintf(w, "\nLatency, client wall time in ms (%d interleaved rounds; first capture: %d)\n\n", r.Rounds, r.FirstRuns)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "mode\tmedian\tp90\tserver durationMs\tsnapshot waitMs\tin a standby")
		for _, s := range rows {
			server, wait, standby := "-", "-", "-"
			if s.ServerMedianMs != nil {
				server, wait = fmt.Sprintf("%.0f", *s.ServerMedianMs), fmt.Sprintf("%.2f", *s.WaitMedianMs)
				standby = fmt.Sprintf("%d/%d", s.Standby, s.N)
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%s\t%s\n", s.Label, s.MedianMs, s.P90Ms, server, wait, standby)
		}
		_ = tw.Flush()
	}
	if r.Memory.Snapshots > 0 {
		fmt.Fprintf(w, "\nFigures (%d full snapshots of at least %d bytes of state)\n\n", r.Memory.Snapshots, r.Memory.MinStateBytes)
	} else {
		fmt.Fprintf(w, "\nFigures\n\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\ttarget\tverdict")
	for _, f := range r.Figures {
		verdict := ""
		if f.Pass != nil {
			verdict = map[bool]string{true: "PASS", false: "MISS"}[*f.Pass]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, formatValue(f), f.Target, verdict)
	}
	_ = tw.Flush()
}

// formatValue prints a figure's value with its unit.
func formatValue(f figure) string {
	switch f.Unit {
	case "×":
		return fmt.Sprintf("%.2f×", f.Value)
	case "req/s":
		return fmt.Sprintf("%.0f req/s", f.Value)
	case "ms":
		return fmt.Sprintf("%.2f ms", f.Value)
	default:
		return fmt.Sprintf("%.1f %s", f.Value, f.Unit)
	}
}

// writeJSON writes r, indented, to path.
func writeJSON(path string, r *results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// machineInfo describes this machine; what cannot be read stays empty.
func machineInfo(ctx context.Context) machine {
	m := machine{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339)}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 64); err == nil {
		m.MemTotalGiB = math.Round(kb/(1<<20)*10) / 10
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	if out, err := exec.CommandContext(ctx, "/bin/bash", "-c", "echo $BASH_VERSION").Output(); err == nil {
		m.Bash = strings.TrimSpace(string(out))
	}
	return m
}

// procField is the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
