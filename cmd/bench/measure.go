package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/snapexec/snapexec/client"
)

const (
	// childPath is the PATH of every command, through the server or not.
	childPath = "/usr/bin:/bin"
	// warmupRounds of the latency modes run before the measured ones and are
	// not kept: they fill page caches and open the client's connection.
	warmupRounds = 3
	// maxSnapshotBytes is the server's bound on a capture's raw output.
	maxSnapshotBytes = 512 << 10
	// fullScopes is the cache's capacity, all filled for the memory figure.
	fullScopes = 16
	// minFullState is the state size below which a snapshot is not "full".
	minFullState = 400 << 10
	// fnPad is the body length of each generated function of a full profile.
	fnPad = 1000
)

// echoHi is the login-shell command of the latency figures; catNull runs a
// program last, which bash runs in its own place.
var (
	echoHi  = []string{"/bin/bash", "-lc", "echo hi"}
	catNull = []string{"/bin/bash", "-lc", "cat /dev/null"}
)

// bashShell is the shell of the bash snapshot requests, zshShell of the zsh
// ones, whose command is zshEchoHi.
var (
	bashShell = client.ShellInfo{Name: "bash", Path: "/bin/bash"}
	zshShell  = client.ShellInfo{Name: "zsh", Path: "/usr/bin/zsh"}
	zshEchoHi = []string{zshShell.Path, "-lc", "echo hi"}
)

// cwdDirs is how many directories the cwd mode runs in, in turn.
const cwdDirs = 3

// want is what a correct /exec answer holds besides exit 0 and an empty
// stderr; standby is "" when either is right, else "yes" or "no".
type want struct{ stdout, outcome, state, standby string }

// sample is one timed command: the client's wall time and, through the
// server, the server's own duration and snapshot wait, and whether a standby
// shell ran it.
type sample struct {
	wallMs, durationMs, waitMs float64
	standby                    bool
}

// mode is one way of running a command, timed one sample per call of run.
type mode struct {
	key, label string
	direct     bool // spawned by the bench itself, not through the server
	run        func(context.Context) (sample, error)
}

// bench runs commands through the server and directly, under the heavy profile's HOME.
type bench struct {
	srv *server
	// unix is srv through its Unix domain socket.
	unix *endpoint
	home string
	// files is the server's --files-root.
	files string
}

// measure runs every phase in turn, reporting progress to log.
func (b *bench) measure(ctx context.Context, o options, tmp string, log io.Writer) (*results, error) {
	res := &results{Machine: machineInfo(ctx), Rounds: o.rounds, FirstRuns: o.firstRuns, Profile: cmp.Or(o.profile, "heavy_profile.sh (built in)")}
	if err := client.Check(b.srv.api.HealthzWithResponse(ctx)); err != nil {
		return nil, fmt.Errorf("GET /healthz: %w", err)
	}
	var err error
	if res.Memory.IdleRSSMiB, _, err = b.srv.memory(); err != nil {
		return nil, err
	}
	if o.hop {
		return b.measureHop(ctx, o, res, log)
	}
	if o.zsh {
		res.Zsh = true
		return b.measureRow(ctx, o, res, log, "zsh", b.zshModes)
	}
	if o.files {
		res.FilesOnly = true
		fmt.Fprintf(log, "files: %d interleaved rounds of a %d MiB read and write against cat and cp\n", filesRounds, filesBytes>>20)
		if res.Files, err = b.filesThroughput(ctx); err != nil {
			return nil, err
		}
		res.Figures = res.figures()
		return res, nil
	}
	if o.session {
		res.Session = true
		return b.measureRow(ctx, o, res, log, "session", b.sessionModes)
	}
	fmt.Fprintf(log, "latency: %d interleaved rounds of every mode\n", o.rounds)
	if res.Latency, err = b.latency(ctx, o.rounds); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "budget: CPU of %d warm commands against %d direct bash -c, then %s idle\n", budgetRuns, budgetRuns, idleWindow)
	if res.Budget, err = b.budget(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "first capture: %d runs against a plain login\n", o.firstRuns)
	if res.FirstCapture, err = b.firstCapture(ctx, o.firstRuns); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "files: %d interleaved rounds of a %d MiB read and write against cat and cp\n", filesRounds, filesBytes>>20)
	if res.Files, err = b.filesThroughput(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "terminals: %d keystrokes, %d first prompts each way\n", 5*o.rounds, max(o.rounds/2, 1))
	if res.Terminal, err = b.terminals(ctx, 5*o.rounds, max(o.rounds/2, 1)); err != nil {
		return nil, err
	}
	for _, c := range []int{1, 4, 16} {
		fmt.Fprintf(log, "throughput: concurrency %d, %d requests each\n", c, o.requests)
		lvl, err := b.throughput(ctx, c, o.requests)
		if err != nil {
			return nil, err
		}
		res.Throughput = append(res.Throughput, lvl)
	}
	fmt.Fprintf(log, "memory: filling the cache with %d full snapshots\n", fullScopes)
	if err := b.fillCache(ctx, tmp, &res.Memory); err != nil {
		return nil, err
	}
	res.Figures = res.figures()
	return res, nil
}

// measureHop is measure for -hop: the hop's latency rows, interleaved, and
// its throughput (res already holds the idle memory).
func (b *bench) measureHop(ctx context.Context, o options, res *results, log io.Writer) (*results, error) {
	res.Hop = true
	fmt.Fprintf(log, "latency: %d interleaved rounds of the hop's 3 modes\n", o.rounds)
	var err error
	if res.Latency, err = interleave(ctx, b.hopModes(), o.rounds, warmupRounds); err != nil {
		return nil, err
	}
	for _, c := range []int{1, 16} {
		fmt.Fprintf(log, "throughput: concurrency %d, %d requests each\n", c, o.requests)
		lvl, err := b.throughput(ctx, c, o.requests)
		if err != nil {
			return nil, err
		}
		res.Throughput = append(res.Throughput, lvl)
	}
	res.Figures = res.figures()
	return res, nil
}

// measureRow is measure for a flag that measures one row (-zsh,
// -session): that row's modes, made by modes, interleaved.
func (b *bench) measureRow(ctx context.Context, o options, res *results, log io.Writer, row string, modes func(context.Context) ([]mode, error)) (*results, error) {
	ms, err := modes(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "latency: %d interleaved rounds of the %s row's %d modes\n", o.rounds, row, len(ms))
	if res.Latency, err = interleave(ctx, ms, o.rounds, warmupRounds); err != nil {
		return nil, err
	}
	res.Figures = res.figures()
	return res, nil
}

// sessionModes captures the warm scopes and returns the session row's
// modes: a session command, a warm /exec in a standby and without one (a
// PATH of its own each time), and /exec without a snapshot.
func (b *bench) sessionModes(ctx context.Context) ([]mode, error) {
	for _, scope := range []string{"bench-warm", "bench-fresh"} {
		for _, state := range []string{"on_demand", "cache_hit"} {
			if _, err := b.exec(ctx, b.execBody(echoHi, scope, b.home), want{"hi\n", "used", state, ""}); err != nil {
				return nil, fmt.Errorf("capturing the warm scope %s: %w", scope, err)
			}
		}
	}
	session, err := b.sessionMode(ctx)
	if err != nil {
		return nil, err
	}
	return []mode{
		session,
		b.execMode("warm", "/exec bash -lc, warm snapshot", echoHi, "bench-warm", want{"hi\n", "used", "cache_hit", "yes"}),
		b.freshMode(),
		b.execMode("nosnap", "/exec bash -lc, no snapshot", echoHi, "", want{"hi\n", "not_requested", "", "no"}),
	}, nil
}

// zshModes captures the zsh scope and returns the zsh row's modes: a warm
// zsh -lc, which after its launch's second command runs in a standby
// shell; the same with a PATH of its own each time, a launch no standby
// waits for, which is a fresh replay (what every warm zsh command cost
// before zsh had standbys); and a direct zsh -c.
func (b *bench) zshModes(ctx context.Context) ([]mode, error) {
	zshBody := b.execBody(zshEchoHi, "bench-zsh", b.home)
	zshBody.ShellSnapshot.Shell = zshShell
	for _, state := range []string{"on_demand", "cache_hit"} {
		if _, err := b.exec(ctx, zshBody, want{"hi\n", "used", state, "no"}); err != nil {
			return nil, fmt.Errorf("capturing the zsh scope: %w", err)
		}
	}
	var nonce atomic.Int64
	return []mode{
		{key: "zsh", label: "/exec zsh -lc, warm snapshot", run: func(ctx context.Context) (sample, error) {
			return b.exec(ctx, zshBody, want{"hi\n", "used", "cache_hit", "yes"})
		}},
		{key: "zshfresh", label: "/exec zsh -lc, warm, no standby", run: func(ctx context.Context) (sample, error) {
			req := b.execBody(zshEchoHi, "bench-zsh", b.home)
			req.ShellSnapshot.Shell = zshShell
			(*req.Env)["PATH"] = childPath + ":/nonexistent/" + fmt.Sprint(nonce.Add(1))
			return b.exec(ctx, req, want{"hi\n", "used", "cache_hit", "no"})
		}},
		b.spawnMode("zshc", "direct zsh -c", "hi\n", zshShell.Path, "-c", "echo hi"),
	}, nil
}

// hopModes are /exec /bin/true over TCP and over the Unix socket, and the
// direct spawn of /bin/true they are measured against.
func (b *bench) hopModes() []mode {
	trueBody := b.execBody([]string{"/bin/true"}, "", b.home)
	return []mode{
		{key: "unixtrue", label: "/exec /bin/true, Unix socket", run: func(ctx context.Context) (sample, error) {
			return b.execVia(ctx, b.unix, trueBody, want{"", "not_requested", "", "no"})
		}},
		b.execMode("exectrue", "/exec /bin/true", []string{"/bin/true"}, "", want{"", "not_requested", "", "no"}),
		b.spawnMode("true", "direct /bin/true", "", "/bin/true"),
	}
}

// latency times the modes of two short commands, interleaved.
//
// Every warm scope serves its commands from a standby shell once its first
// command has run, except "fresh": each of its requests sends a PATH of its
// own, a launch no standby waits for, so it shows what a warm command costs
// without one. "burst" times the second of two requests sent back to back;
// "envdiff" sends a trace id of its own each time, and "cwd" runs in one of
// cwdDirs directories in turn, each its own snapshot.
func (b *bench) latency(ctx context.Context, rounds int) ([]summary, error) {
	for _, scope := range []string{"bench-warm", "bench-fresh", "bench-burst", "bench-env"} {
		if _, err := b.exec(ctx, b.execBody(echoHi, scope, b.home), want{"hi\n", "used", "on_demand", "no"}); err != nil {
			return nil, fmt.Errorf("capturing the warm scope %s: %w", scope, err)
		}
	}
	var cwdBodies []client.ExecRequest
	for i := range cwdDirs {
		dir := filepath.Join(b.home, fmt.Sprintf("dir-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		body := b.execBody(echoHi, "bench-cwd", b.home)
		body.Cwd = &dir
		for _, state := range []string{"on_demand", "cache_hit"} {
			if _, err := b.exec(ctx, body, want{"hi\n", "used", state, "no"}); err != nil {
				return nil, fmt.Errorf("capturing the cwd scope in %s: %w", dir, err)
			}
		}
		cwdBodies = append(cwdBodies, body)
	}
	zshModes, err := b.zshModes(ctx)
	if err != nil {
		return nil, err
	}
	envBody := func(trace string) client.ExecRequest {
		req := b.execBody(echoHi, "bench-env", b.home)
		(*req.Env)["TRACE_ID"] = trace
		return req
	}
	// The launch repeats, with another trace id: its standby starts. (The
	// warm scopes' launches are the same shell, cwd and env, which already
	// repeated: one may wait already.)
	if _, err := b.exec(ctx, envBody("first"), want{"hi\n", "used", "cache_hit", ""}); err != nil {
		return nil, err
	}
	sandboxedWarm := b.sandboxed(b.execBody(echoHi, "bench-warm", b.home))
	if _, err := b.exec(ctx, sandboxedWarm, want{"hi\n", "used", "on_demand", "no"}); err != nil {
		return nil, fmt.Errorf("capturing the sandboxed warm scope: %w", err)
	}
	// The launches repeat: their standbys start. (catNull is the same launch.)
	if _, err := b.exec(ctx, b.execBody(echoHi, "bench-warm", b.home), want{"hi\n", "used", "cache_hit", "no"}); err != nil {
		return nil, err
	}
	if _, err := b.exec(ctx, sandboxedWarm, want{"hi\n", "used", "cache_hit", "no"}); err != nil {
		return nil, err
	}
	trueSandboxed := b.sandboxed(b.execBody([]string{"/bin/true"}, "", b.home))
	if _, _, err := b.prewarm(ctx, "bench-prewarm", b.home, false); err != nil {
		return nil, err
	}
	var nonce atomic.Int64
	fresh := b.freshMode()
	envdiff := mode{key: "envdiff", label: "/exec bash -lc, warm, env differs (a trace id)", run: func(ctx context.Context) (sample, error) {
		return b.exec(ctx, envBody(fmt.Sprint("trace-", nonce.Add(1))), want{"hi\n", "used", "cache_hit", ""})
	}}
	var cwdTurn atomic.Int64
	cwd := mode{key: "cwd", label: fmt.Sprintf("/exec bash -lc, warm, cwd differs (%d dirs)", cwdDirs), run: func(ctx context.Context) (sample, error) {
		return b.exec(ctx, cwdBodies[cwdTurn.Add(1)%cwdDirs], want{"hi\n", "used", "cache_hit", ""})
	}}
	burstBody := b.execBody(echoHi, "bench-burst", b.home)
	burst := mode{key: "burst", label: "/exec bash -lc, warm, back to back", run: func(ctx context.Context) (sample, error) {
		if _, err := b.exec(ctx, burstBody, want{"hi\n", "used", "cache_hit", ""}); err != nil {
			return sample{}, err
		}
		return b.exec(ctx, burstBody, want{"hi\n", "used", "cache_hit", ""})
	}}
	session, err := b.sessionMode(ctx)
	if err != nil {
		return nil, err
	}
	modes := []mode{
		session,
		b.execMode("warm", "/exec bash -lc, warm snapshot", echoHi, "bench-warm", want{"hi\n", "used", "cache_hit", "yes"}),
		b.execMode("warmcat", "/exec bash -lc 'cat /dev/null', warm", catNull, "bench-warm", want{"", "used", "cache_hit", "yes"}),
		b.execMode("prewarmed", "/exec bash -lc, prewarmed snapshot", echoHi, "bench-prewarm", want{"hi\n", "used", "prewarm_ready", ""}),
		fresh,
		burst,
		envdiff,
		cwd,
		zshModes[0],
		zshModes[1],
		b.execMode("nosnap", "/exec bash -lc, no snapshot", echoHi, "", want{"hi\n", "not_requested", "", "no"}),
		{key: "sbwarm", label: "/exec bash -lc, warm snapshot, sandboxed", run: func(ctx context.Context) (sample, error) {
			return b.exec(ctx, sandboxedWarm, want{"hi\n", "used", "cache_hit", "yes"})
		}},
		{key: "sbtrue", label: "/exec /bin/true, sandboxed", run: func(ctx context.Context) (sample, error) {
			return b.exec(ctx, trueSandboxed, want{"", "not_requested", "", "no"})
		}},
		b.spawnMode("bashc", "direct bash -c", "hi\n", "/bin/bash", "-c", "echo hi"),
		b.spawnMode("bashcat", "direct bash -c 'cat /dev/null'", "", "/bin/bash", "-c", "cat /dev/null"),
		zshModes[2],
	}
	return interleave(ctx, append(modes, b.hopModes()...), rounds, warmupRounds)
}

// firstCapture times the first command of a fresh scope (forgotten before
// each run, untimed) against a plain login shell, interleaved.
func (b *bench) firstCapture(ctx context.Context, runs int) ([]summary, error) {
	const scope = "bench-first"
	body := b.execBody(echoHi, scope, b.home)
	first := mode{key: "first", label: "/exec bash -lc, first capture", run: func(ctx context.Context) (sample, error) {
		if err := client.Check(b.srv.api.ForgetSnapshotsWithResponse(ctx, scope)); err != nil {
			return sample{}, fmt.Errorf("DELETE /snapshots/%s: %w", scope, err)
		}
		return b.exec(ctx, body, want{"hi\n", "used", "on_demand", "no"})
	}}
	login := b.spawnMode("login", "direct bash -lc (plain login)", "hi\n", echoHi...)
	return interleave(ctx, []mode{first, login}, runs, 1)
}

// settle is the pause before each latency sample, a client's think time:
// work a sample leaves behind (a standby shell's restore) ends before the
// next is timed. The back-to-back mode has no pause within its pair.
const settle = 20 * time.Millisecond

// interleave runs warmup unkept rounds and then rounds kept ones; each round
// takes one sample of every mode, in a new random order, so that a drift of
// the machine hits every mode alike.
func interleave(ctx context.Context, modes []mode, rounds, warmup int) ([]summary, error) {
	samples := make([][]sample, len(modes))
	order := make([]int, len(modes))
	for i := range order {
		order[i] = i
	}
	for r := range warmup + rounds {
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			time.Sleep(settle)
			s, err := modes[i].run(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", modes[i].label, err)
			}
			if r >= warmup {
				samples[i] = append(samples[i], s)
			}
		}
	}
	out := make([]summary, len(modes))
	for i, m := range modes {
		out[i] = summarize(m, samples[i])
	}
	return out, nil
}

// throughput measures /exec of /bin/true against spawning /bin/true, both at
// concurrency c, and the CPU time each spawner (the server, the bench) spends
// per command. The passes go server, direct, direct, server, half the requests
// each, so that a linear drift of the machine hits both alike.
func (b *bench) throughput(ctx context.Context, c, requests int) (level, error) {
	body := b.execBody([]string{"/bin/true"}, "", b.home)
	viaServer := func(ctx context.Context) error {
		_, err := b.exec(ctx, body, want{"", "not_requested", "", "no"})
		return err
	}
	direct := func(ctx context.Context) error {
		_, err := b.spawn(ctx, "", "/bin/true")
		return err
	}
	// Open the c connections before timing.
	if _, err := parallel(ctx, c, 2*c, viaServer); err != nil {
		return level{}, err
	}
	half := requests / 2
	var tServer, tDirect, cpuServer, cpuDirect time.Duration
	for _, throughServer := range []bool{true, false, false, true} {
		f, total, cpu, spent := direct, &tDirect, selfCPU, &cpuDirect
		if throughServer {
			f, total, cpu, spent = viaServer, &tServer, b.srv.cpu, &cpuServer
		}
		cpuBefore, err := cpu()
		if err != nil {
			return level{}, err
		}
		d, err := parallel(ctx, c, half, f)
		if err != nil {
			return level{}, fmt.Errorf("throughput at concurrency %d: %w", c, err)
		}
		cpuAfter, err := cpu()
		if err != nil {
			return level{}, err
		}
		*total += d
		*spent += cpuAfter - cpuBefore
	}
	lvl := level{
		Concurrency:        c,
		Requests:           2 * half,
		ServerRPS:          float64(2*half) / tServer.Seconds(),
		DirectRPS:          float64(2*half) / tDirect.Seconds(),
		ServerCPUPerReqMs:  round3(ms(cpuServer) / float64(2*half)),
		BenchCPUPerSpawnMs: round3(ms(cpuDirect) / float64(2*half)),
	}
	lvl.Ratio = lvl.ServerRPS / lvl.DirectRPS
	return lvl, nil
}

// parallel calls f n times from c goroutines and returns the wall time; the
// first error stops every goroutine and is returned.
func parallel(ctx context.Context, c, n int, f func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				if err := f(ctx); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), context.Cause(ctx)
}

// fillCache fills the cache with fullScopes snapshots of nearly the maximum
// size, each scope with a HOME of its own whose profile defines functions
// totalling just under maxSnapshotBytes of `declare -f` output, replays each
// once, and reads the server's memory.
func (b *bench) fillCache(ctx context.Context, tmp string, m *memoryFigures) error {
	probe, err := declareBytes(ctx, tmp, fullProfile(0, 64))
	if err != nil {
		return err
	}
	per := probe / 64
	// The raw capture also holds the markers, options and environment: a few
	// hundred bytes, well inside the 4 KiB left over.
	count := (maxSnapshotBytes - 4<<10) / per
	m.MinStateBytes = maxSnapshotBytes
	for i := range fullScopes {
		home := filepath.Join(tmp, fmt.Sprintf("full%02d", i))
		if err := os.Mkdir(home, 0o755); err != nil {
			return err
		}
		scope := fmt.Sprintf("bench-full-%02d", i)
		for attempt := 0; ; attempt++ {
			if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(fullProfile(i, count)), 0o644); err != nil {
				return err
			}
			e, tooLarge, err := b.prewarm(ctx, scope, home, false)
			if tooLarge && attempt < 8 {
				count -= (8 << 10) / per
				continue
			}
			if err != nil {
				return err
			}
			if e.StateBytes < minFullState {
				return fmt.Errorf("snapshot of %s holds %d bytes of state, want more than %d", scope, e.StateBytes, minFullState)
			}
			m.MinStateBytes = min(m.MinStateBytes, e.StateBytes)
			break
		}
	}
	for i := range fullScopes {
		// Twice: the repeated launch starts a standby (the last ones stay).
		body := b.execBody(echoHi, fmt.Sprintf("bench-full-%02d", i), filepath.Join(tmp, fmt.Sprintf("full%02d", i)))
		for range 2 {
			if _, err := b.exec(ctx, body, want{"hi\n", "used", "prewarm_ready", "no"}); err != nil {
				return fmt.Errorf("replaying a full snapshot: %w", err)
			}
		}
	}
	list, err := client.Result(b.srv.api.ListSnapshotsWithResponse(ctx))
	if err != nil {
		return fmt.Errorf("GET /snapshots: %w", err)
	}
	for _, e := range list.Entries {
		if strings.HasPrefix(e.ScopeId, "bench-full-") && e.State == client.SnapshotEntryStateReady && e.StateBytes >= minFullState {
			m.Snapshots++
		}
	}
	if m.Snapshots != fullScopes {
		return fmt.Errorf("GET /snapshots holds %d full ready snapshots, want %d", m.Snapshots, fullScopes)
	}
	m.FunctionsPerProfile = count
	if m.DeclareBytes, err = declareBytes(ctx, tmp, fullProfile(0, count)); err != nil {
		return err
	}
	// The last standbys start in the background: let them finish restoring.
	time.Sleep(500 * time.Millisecond)
	m.StandbyShells, m.StandbyRSSMiB = b.srv.standbyMemory()
	m.FullRSSMiB, m.PeakHWMMiB, err = b.srv.memory()
	return err
}

// fullProfile defines count functions of fnPad-byte bodies, named and filled
// after tag so that no two profiles are alike.
func fullProfile(tag, count int) string {
	var sb strings.Builder
	for j := range count {
		pad := strings.Repeat(string(rune('a'+(tag+j)%26)), fnPad)
		fmt.Fprintf(&sb, "full%02d_%05d() { echo \"%s\"; }\n", tag, j, pad)
	}
	return sb.String()
}

// declareBytes is the size of `declare -f` after sourcing profile.
func declareBytes(ctx context.Context, tmp, profile string) (int, error) {
	path := filepath.Join(tmp, "declare.sh")
	if err := os.WriteFile(path, []byte(profile), 0o644); err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, "/bin/bash", "-c", `. "$1" && declare -f`, "bash", path)
	cmd.Env = []string{"PATH=" + childPath}
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("declare -f of a generated profile: %w", err)
	}
	return len(out), nil
}

// envFor is the environment of every command: the given HOME and childPath.
func envFor(home string) map[string]string {
	return map[string]string{"HOME": home, "PATH": childPath}
}

// execBody is an /exec request for argv run in home, with the snapshot of
// scope when scope is not empty.
func (b *bench) execBody(argv []string, scope, home string) client.ExecRequest {
	env := envFor(home)
	req := client.ExecRequest{Argv: argv, Cwd: &home, Env: &env}
	if scope != "" {
		req.ShellSnapshot = &client.ShellSnapshotRequest{ScopeId: scope, Shell: bashShell}
	}
	return req
}

// sandboxed is req with the sandboxed modes' sandbox: the home writable, no
// network, as an agent's command is commonly confined.
func (b *bench) sandboxed(req client.ExecRequest) client.ExecRequest {
	network := client.SandboxNetworkNone
	req.Sandbox = &client.Sandbox{WritableRoots: &[]string{b.home}, Network: &network}
	return req
}

// sessionMode is a mode running a command in a session that starts from
// the warm scope's snapshot (the heavy profile's functions in its state):
// each command changes the state (a variable and the directory), so the
// next restores the state the last one dumped, never the cached snapshot.
func (b *bench) sessionMode(ctx context.Context) (mode, error) {
	id, home, env := "bench-session", b.home, envFor(b.home)
	create := client.SessionCreateRequest{SessionId: &id, Shell: bashShell, Cwd: &home, Env: &env,
		ShellSnapshot: &client.SessionSnapshotRequest{ScopeId: "bench-warm"}}
	if err := client.Check(b.srv.api.CreateSessionWithResponse(ctx, create)); err != nil {
		return mode{}, fmt.Errorf("POST /sessions: %w", err)
	}
	script := client.SessionExecRequest{Script: `echo hi; BENCH_N=$(( ${BENCH_N:-0} + 1 )); if (( BENCH_N % 2 )); then cd /tmp; else cd; fi`}
	n := 0
	return mode{key: "session", label: "/sessions/{id}/exec after a state change", run: func(ctx context.Context) (sample, error) {
		start := time.Now()
		r, err := client.Result(b.srv.api.SessionExecWithResponse(ctx, id, script))
		wall := time.Since(start)
		if err != nil {
			return sample{}, fmt.Errorf("POST /sessions/%s/exec: %w", id, err)
		}
		// The script goes to /tmp and home in turn, and changes BENCH_N
		// (the first adds it), and no function.
		n++
		cwd, vars := home, r.Session.Variables.Changed
		if n%2 == 1 {
			cwd = "/tmp"
		}
		if n == 1 {
			vars = r.Session.Variables.Added
		}
		fns := r.Session.Functions
		if r.Status != client.ExitStatusExited || r.Stdout == nil || *r.Stdout != "hi\n" || r.Stderr != nil && *r.Stderr != "" || !r.Session.StateKept ||
			r.Session.Cwd != cwd || !slices.Contains(vars, "BENCH_N") || len(fns.Added)+len(fns.Changed)+len(fns.Removed) > 0 {
			got, _ := json.Marshal(r) // cannot fail: the generated type
			return sample{}, fmt.Errorf("POST /sessions/%s/exec = %.600s\nwant hi, the state kept, cwd %s, BENCH_N changed", id, got, cwd)
		}
		return sample{wallMs: ms(wall), durationMs: float64(r.DurationMs), standby: r.Snapshot.Standby}, nil
	}}, nil
}

// freshMode is a warm /exec bash -lc that no standby serves.
func (b *bench) freshMode() mode {
	var nonce atomic.Int64
	return mode{key: "fresh", label: "/exec bash -lc, warm, no standby", run: func(ctx context.Context) (sample, error) {
		req := b.execBody(echoHi, "bench-fresh", b.home)
		// A PATH of its own: a launch of its own, which no standby serves.
		(*req.Env)["PATH"] = childPath + ":/nonexistent/" + fmt.Sprint(nonce.Add(1))
		return b.exec(ctx, req, want{"hi\n", "used", "cache_hit", "no"})
	}}
}

// execMode is a mode running argv through /exec.
func (b *bench) execMode(key, label string, argv []string, scope string, w want) mode {
	body := b.execBody(argv, scope, b.home)
	return mode{key: key, label: label, run: func(ctx context.Context) (sample, error) { return b.exec(ctx, body, w) }}
}

// spawnMode is a mode spawning argv from the bench itself.
func (b *bench) spawnMode(key, label, stdout string, argv ...string) mode {
	return mode{key: key, label: label, direct: true, run: func(ctx context.Context) (sample, error) { return b.spawn(ctx, stdout, argv...) }}
}

// exec runs req through /exec, checks the answer against w and times it.
func (b *bench) exec(ctx context.Context, req client.ExecRequest, w want) (sample, error) {
	return b.execVia(ctx, b.srv.endpoint, req, w)
}

// execVia is exec through ep.
func (b *bench) execVia(ctx context.Context, ep *endpoint, req client.ExecRequest, w want) (sample, error) {
	start := time.Now()
	r, err := ep.api.Exec(ctx, req)
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("POST /exec %q: %w", req.Argv, err)
	}
	var state string
	if r.Snapshot.State != nil {
		state = string(*r.Snapshot.State)
	}
	standbyOK := w.standby == "" || (w.standby == "yes") == r.Snapshot.Standby
	wantSandbox := client.SandboxReportTypeNone
	if req.Sandbox != nil {
		wantSandbox = client.SandboxReportTypeLandlock
	}
	if r.Status != client.ExitStatusExited || r.ExitCode == nil || *r.ExitCode != 0 || string(r.StdoutData()) != w.stdout || len(r.StderrData()) > 0 ||
		string(r.Snapshot.Outcome) != w.outcome || state != w.state || !standbyOK || r.Sandbox == nil || r.Sandbox.Type != wantSandbox {
		got, _ := json.Marshal(r) // cannot fail: the generated type
		return sample{}, fmt.Errorf("POST /exec %q = %.300s\nwant exit 0, stdout %q, no stderr, snapshot %s %s, standby %q, sandbox %s", req.Argv, got, w.stdout, w.outcome, w.state, w.standby, wantSandbox)
	}
	return sample{wallMs: ms(wall), durationMs: float64(r.DurationMs), waitMs: r.Snapshot.WaitMs, standby: r.Snapshot.Standby}, nil
}

// spawn runs argv from the bench itself, with the same env and cwd as the
// server's commands, checks its output and times it.
func (b *bench) spawn(ctx context.Context, stdout string, argv ...string) (sample, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"HOME=" + b.home, "PATH=" + childPath}
	cmd.Dir = b.home
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil || out.String() != stdout || errOut.Len() > 0 {
		return sample{}, fmt.Errorf("%q = %v, stdout %q, stderr %q; want exit 0, stdout %q", argv, err, out.String(), errOut.String(), stdout)
	}
	return sample{wallMs: ms(wall)}, nil
}

// prewarm captures scope's snapshot for home ahead of need and checks it is
// ready; tooLarge reports a capture the server rejected as too large.
func (b *bench) prewarm(ctx context.Context, scope, home string, terminal bool) (e *client.SnapshotEntry, tooLarge bool, err error) {
	env := envFor(home)
	e, err = client.Result(b.srv.api.PrewarmSnapshotWithResponse(ctx, scope, nil, client.PrewarmRequest{Shell: bashShell, Cwd: &home, Env: &env, Terminal: &terminal}))
	if problem, ok := errors.AsType[*client.Error](err); ok {
		tooLarge = problem.Code == client.ProblemCodeCaptureFailed && strings.HasPrefix(problem.Detail, "too_large")
	}
	if err != nil {
		return nil, tooLarge, fmt.Errorf("POST /snapshots/%s/prewarm: %w", scope, err)
	}
	if e.State != client.SnapshotEntryStateReady || e.Terminal != terminal {
		return nil, false, fmt.Errorf("POST /snapshots/%s/prewarm: the entry is %s (terminal %t), want ready (terminal %t)", scope, e.State, e.Terminal, terminal)
	}
	return e, false, nil
}

// selfCPU is the CPU time the bench itself has used (its children's excluded).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// budgetRuns is how many warm commands and direct bash -c the CPU budget
// times; idleWindow is how long the idle server is watched.
const (
	budgetRuns = 40
	idleWindow = 5 * time.Second
)

// budgetFigures is what pre-started shells cost: CPU per warm command, with
// every shell of the server, against a direct bash -c, and the CPU of the
// idle server with its standbys waiting.
type budgetFigures struct {
	// WarmCPUMs is the CPU of the server and of all its children (the
	// command, the standby's restore, its refill) per warm command.
	WarmCPUMs float64 `json:"warmCpuMs"`
	// WarmServerCPUMs is the part of WarmCPUMs the server itself used; the
	// rest is its shells' (each command's standby: its start, its restore
	// and the command).
	WarmServerCPUMs float64 `json:"warmServerCpuMs"`
	// DirectCPUMs is the bench's own CPU and its child's per direct bash -c.
	DirectCPUMs float64 `json:"directCpuMs"`
	// WarmStandbys counts the warm commands a standby ran.
	WarmStandbys int `json:"warmStandbys"`
	// IdleCPUMsPerS is the time on a CPU of every thread of the idle server
	// and of its waiting standbys, per second of idleWindow.
	IdleCPUMsPerS float64 `json:"idleCpuMsPerS"`
	// IdleStandbys counts the standbys waiting meanwhile.
	IdleStandbys int `json:"idleStandbys"`
}

// budget measures budgetFigures: budgetRuns warm commands, each after the
// settle pause (so that its refill is in the window), then as many direct
// bash -c, then the idle server.
func (b *bench) budget(ctx context.Context) (budgetFigures, error) {
	var f budgetFigures
	body := b.execBody(echoHi, "bench-warm", b.home)
	before, err := b.srv.cpuWithChildren()
	if err != nil {
		return f, err
	}
	serverBefore, err := b.srv.cpu()
	if err != nil {
		return f, err
	}
	for range budgetRuns {
		time.Sleep(settle)
		s, err := b.exec(ctx, body, want{"hi\n", "used", "cache_hit", ""})
		if err != nil {
			return f, err
		}
		if s.standby {
			f.WarmStandbys++
		}
	}
	time.Sleep(settle)
	after, err := b.srv.cpuWithChildren()
	if err != nil {
		return f, err
	}
	serverAfter, err := b.srv.cpu()
	if err != nil {
		return f, err
	}
	f.WarmCPUMs = round3(ms(after-before) / budgetRuns)
	f.WarmServerCPUMs = round3(ms(serverAfter-serverBefore) / budgetRuns)

	directBefore, err := benchCPU()
	if err != nil {
		return f, err
	}
	for range budgetRuns {
		time.Sleep(settle)
		if _, err := b.spawn(ctx, "hi\n", "/bin/bash", "-c", "echo hi"); err != nil {
			return f, err
		}
	}
	directAfter, err := benchCPU()
	if err != nil {
		return f, err
	}
	f.DirectCPUMs = round3(ms(directAfter-directBefore) / budgetRuns)

	// The refills end; then nothing comes.
	time.Sleep(time.Second)
	f.IdleStandbys = len(b.srv.standbyPids())
	idleBefore := b.srv.runTime()
	time.Sleep(idleWindow)
	f.IdleCPUMsPerS = round3(ms(b.srv.runTime()-idleBefore) / idleWindow.Seconds())
	return f, nil
}

// benchCPU is the CPU time of the bench and of its reaped children.
func benchCPU() (time.Duration, error) {
	var self, children syscall.Rusage
	if err := errors.Join(syscall.Getrusage(syscall.RUSAGE_SELF, &self), syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)); err != nil {
		return 0, err
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano()), nil
}
