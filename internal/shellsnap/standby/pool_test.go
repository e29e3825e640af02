package standby

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

func TestStandbyKeyIsTheWholeLaunch(t *testing.T) {
	snap, other := &shellsnap.Snapshot{}, &shellsnap.Snapshot{}
	base := exec.Spec{Argv: []string{"/bin/bash", "--noprofile", "-lc", "x"}, Dir: "/tmp", Env: []string{"A=1", "B=2", "BASH_ENV=/restore/1"}}
	key := keyOf(snap, base, nil)

	same := base
	same.Argv = []string{"/bin/bash", "--noprofile", "-lc", "another script"}
	same.Env = []string{"A=1", "B=2", "BASH_ENV=/restore/2"}
	if keyOf(snap, same, nil) != key {
		t.Errorf("a launch that differs only in its script and restore file has another key")
	}
	differ := map[string]exec.Spec{
		"env value":   {Argv: base.Argv, Dir: base.Dir, Env: []string{"A=1", "B=3"}},
		"env name":    {Argv: base.Argv, Dir: base.Dir, Env: []string{"A=1", "C=2"}},
		"env split":   {Argv: base.Argv, Dir: base.Dir, Env: []string{"A=1\x00B=2"}},
		"cwd":         {Argv: base.Argv, Dir: "/", Env: base.Env},
		"shell":       {Argv: []string{"/usr/bin/bash", "--noprofile", "-lc", "x"}, Dir: base.Dir, Env: base.Env},
		"output size": {Argv: base.Argv, Dir: base.Dir, Env: base.Env, MaxOutputBytes: 10},
		"sandbox":     {Argv: base.Argv, Dir: base.Dir, Env: base.Env, Sandbox: sandbox.Policy{WritableRoots: []string{"/tmp"}}},
		"network":     {Argv: base.Argv, Dir: base.Dir, Env: base.Env, Sandbox: sandbox.Policy{Network: sandbox.NetworkNone}},
	}
	for name, spec := range differ {
		if keyOf(snap, spec, nil) == key {
			t.Errorf("launches that differ in %s share a key", name)
		}
	}
	if keyOf(other, base, nil) == key {
		t.Errorf("launches of two snapshots share a key")
	}
}

func TestSeenLaunchesAreBounded(t *testing.T) {
	sb, err := New(nil, func(*shellsnap.Snapshot) bool { return true }, Options{Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	var first launchID
	first[0] = 1
	if sb.seenLocked(first) {
		t.Fatalf("a launch's first run counts as a repeat")
	}
	if !sb.seenLocked(first) {
		t.Fatalf("a launch's second run does not count as a repeat")
	}
	for i := range 3 * maxSeenLaunches {
		var l launchID
		l[1], l[2] = byte(i), byte(i>>8)
		sb.seenLocked(l)
	}
	if n := len(sb.seen); n > maxSeenLaunches {
		t.Fatalf("%d launches remembered, want at most %d", n, maxSeenLaunches)
	}
}

// rig is a pool on a real exec.Manager and a real cache, with the
// service's way of starting a snapshot command: Prepare, Replay, Start.
type rig struct {
	t     *testing.T
	procs *exec.Manager
	cache *shellsnap.Cache
	pool  *Pool
	// home holds the .bashrc of every launch and is their cwd, unless a
	// command says otherwise.
	home string
	// zsh is set for a rig whose launches are zsh's (newZshRig).
	zsh bool
	// reader collects the pool's metrics.
	reader *sdkmetric.ManualReader
	// seen holds every standby the rig saw idle.
	seen []*exec.Held
}

// newRig returns a rig whose HOME has bashrc as its .bashrc.
func newRig(t *testing.T, bashrc string, opts Options) *rig {
	t.Helper()
	r := &rig{t: t, procs: newTestProcs(t), home: t.TempDir(), reader: sdkmetric.NewManualReader()}
	writeFile(t, filepath.Join(r.home, ".bashrc"), bashrc)
	r.cache = newTestCache(t, r.procs)
	opts.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader)).Meter("test")
	pool, err := New(r.procs, r.cache.Holds, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.pool = pool
	return r
}

// newZshRig returns a rig of zsh launches whose HOME has zshrc as its
// .zshrc.
func newZshRig(t *testing.T, zshrc string, opts Options) *rig {
	t.Helper()
	r := newRig(t, "", opts)
	r.zsh = true
	writeFile(t, filepath.Join(r.home, ".zshrc"), zshrc)
	return r
}

// command is one snapshot command of the rig.
type command struct {
	scope, script, cwd string
	env                map[string]string // laid over loginEnv
	timeout            time.Duration
	sandbox            sandbox.Policy
}

// ran is a command that ran, and how.
type ran struct {
	p       *exec.Process
	receipt shellsnap.Receipt
	standby bool
	stdout  string
	stderr  string
}

// run runs c to its end as the service would, the receipt marked standby
// when a standby ran it, as the service marks it.
func (r *rig) run(c command) ran {
	r.t.Helper()
	env := loginEnv(r.home)
	maps.Copy(env, c.env)
	shell, req := "bash", bashRequest(c.scope)
	if r.zsh {
		shell, req = "zsh", zshRequest(c.scope)
	}
	l := shellsnap.Launch{Argv: []string{req.Shell.Path, "-lc", c.script}, Cwd: cmp.Or(c.cwd, r.home), Env: env, Sandbox: c.sandbox}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prepared, err := r.cache.Prepare(ctx, req, l)
	if err != nil {
		r.t.Fatalf("Prepare(%q) error %v", c.script, err)
	}
	spec := exec.Spec{Argv: l.Argv, Dir: l.Cwd, Env: envPairs(l.Env), Timeout: c.timeout, Sandbox: c.sandbox}
	var in *shellsnap.ReplayInput
	if prepared.Snapshot != nil {
		in = &shellsnap.ReplayInput{Snapshot: prepared.Snapshot, Shell: shell, Command: l.Argv, Env: l.Env}
		argv, replayEnv := shellsnap.Replay(*in)
		spec.Argv, spec.Env = argv, envPairs(replayEnv)
	}
	p, standby, err := r.pool.Start(ctx, spec, in)
	if err != nil {
		r.t.Fatalf("Start(%q) error %v", c.script, err)
	}
	p.Wait(ctx)
	res := p.Result()
	receipt := prepared.Receipt
	receipt.Standby = standby
	return ran{p: p, receipt: receipt, standby: standby, stdout: string(res.Stdout.Data), stderr: string(res.Stderr.Data)}
}

// idle returns the pool's idle standbys now.
func (r *rig) idle() []*exec.Held {
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	var held []*exec.Held
	for _, ss := range r.pool.idle {
		for _, s := range ss {
			held = append(held, s.held)
			if !slices.Contains(r.seen, s.held) {
				r.seen = append(r.seen, s.held)
			}
		}
	}
	return held
}

// waitNone waits until no standby is idle and every one the rig saw has
// ended.
func (r *rig) waitNone() {
	r.t.Helper()
	r.waitIdle(0)
	for _, h := range r.seen {
		waitEnded(r.t, "a standby", h)
	}
}

// waitIdle waits until exactly n standbys wait, every one of them alive,
// and returns them: a launch's standby starts after its command.
func (r *rig) waitIdle(n int) []*exec.Held {
	r.t.Helper()
	var held []*exec.Held
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		held = r.idle()
		if len(held) == n && !slices.ContainsFunc(held, ended) || time.Now().After(deadline) {
			break
		}
	}
	if len(held) != n || slices.ContainsFunc(held, ended) {
		r.t.Fatalf("idle standbys: %d (ended among them: %v), want %d alive", len(held), slices.ContainsFunc(held, ended), n)
	}
	return held
}

// waitEnded waits until h has ended.
func waitEnded(t *testing.T, what string, h *exec.Held) {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still runs", what)
	}
}

// ended reports whether h has ended.
func ended(h *exec.Held) bool {
	select {
	case <-h.Done():
		return true
	default:
		return false
	}
}

// forget forgets scope's snapshots and prunes, as the service does.
func (r *rig) forget(scope string) {
	r.cache.Forget(scope)
	r.pool.Prune()
}

// commandCounts returns the snapexec.standby.commands counter by result.
func (r *rig) commandCounts() map[string]int64 {
	r.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		r.t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "snapexec.standby.commands" {
				for _, dp := range sum.DataPoints {
					result, _ := dp.Attributes.Value("result")
					counts[result.AsString()] += dp.Value
				}
			}
		}
	}
	return counts
}

// TestStandbyServesTheNextWarmCommand: a launch earns a standby when it
// repeats; the standby runs the next command of the launch with the
// profile's state, as the process in the table; a program run last takes
// its place; an unfit script runs fresh; another launch gets none of it;
// forgetting the scope ends them.
func TestStandbyServesTheNextWarmCommand(t *testing.T) {
	r := newRig(t, "export FROM_PROFILE=yes\ngreet() { echo \"hello $1\"; }\nset -o pipefail\n", Options{Max: 4})
	const scope = "standby"

	if got := r.run(command{scope: scope, script: "greet a"}); got.stdout != "hello a\n" || got.receipt.State != shellsnap.StateOnDemand || got.standby || got.receipt.Standby {
		t.Fatalf("first command = %+v, want hello a, captured on demand, not in a standby", got)
	}
	// A launch earns a standby when it repeats, not on its first command.
	time.Sleep(100 * time.Millisecond)
	r.waitIdle(0)
	if got := r.run(command{scope: scope, script: "greet z"}); got.stdout != "hello z\n" || got.standby {
		t.Fatalf("repeated launch = %+v, want hello z, not yet in a standby", got)
	}
	standby := r.waitIdle(1)[0]

	// Another script of the same launch: the standby runs it, with the
	// profile's functions, exports and options (pipefail makes the status 1).
	got := r.run(command{scope: scope, script: "greet b; echo $FROM_PROFILE; false | true; echo $?"})
	if got.stdout != "hello b\nyes\n1\n" || got.stderr != "" || got.receipt.State != shellsnap.StateCacheHit || !got.standby || !got.receipt.Standby {
		t.Fatalf("second command = %+v, want hello b, yes, 1 from a standby on a cache hit, its receipt marked", got)
	}
	if got.p.Done() != standby.Done() {
		t.Errorf("second command ran as another process than the standby that waited")
	}
	if p, ok := r.procs.Get(got.p.ID()); !ok || p != got.p || p.Result().Status != exec.StatusExited {
		t.Errorf("Get(%s) = %v, %v; want the standby's command in the table like any other, exited", got.p.ID(), p, ok)
	}
	// Its successor is ready for the next command.
	if next := r.waitIdle(1)[0]; next == standby {
		t.Errorf("standby after the second command is the one it used, want a new one")
	}
	if st := r.pool.Stats(); st != (Stats{Max: 4, Idle: 1, Hit: 1, Miss: 2, Unfit: 0}) {
		t.Errorf("Stats() = %+v, want hit 1, idle 1 of 4, miss 2 (the capture and the repeat), unfit 0", st)
	}
	if counts := r.commandCounts(); counts["hit"] != 1 || counts["miss"] != 2 {
		t.Errorf("snapexec.standby.commands = %v, want hit 1, miss 2", counts)
	}

	// A program run last takes the shell's place, as in a fresh shell: its
	// crash is the process's own signal, not an exit code from bash.
	r.waitIdle(1)
	if got := r.run(command{scope: scope, script: "echo before; sh -c 'kill -SEGV $$'"}); got.p.Result().Status != exec.StatusSignaled || got.p.Result().Signal != "SIGSEGV" || !got.standby {
		t.Errorf("standby command whose program crashes = %+v, want signaled SIGSEGV from a standby", got.p.Result())
	}
	r.waitIdle(1)

	// A program run last after a profile function, which might have set a
	// trap: only a fresh replay can tell what bash does, so one runs it, and
	// the standby waits on.
	if got := r.run(command{scope: scope, script: "greet q; cat /dev/null"}); got.stdout != "hello q\n" || got.standby {
		t.Errorf("unfit script = %+v, want hello q from a fresh replay", got)
	}
	r.waitIdle(1)

	// A command whose environment differs only in a variable the replay
	// passes through (a trace id) is the same launch: the standby runs it
	// with its own value, and every later one with theirs.
	for _, trace := range []string{"t-1", "t-2"} {
		got := r.run(command{scope: scope, script: "echo ${TRACE_ID-unset} $FROM_PROFILE", env: map[string]string{"TRACE_ID": trace}})
		if got.stdout != trace+" yes\n" || !got.standby {
			t.Errorf("command with TRACE_ID=%s = %+v, want its own trace id from a standby", trace, got)
		}
		r.waitIdle(1)
	}
	if got := r.run(command{scope: scope, script: "echo ${TRACE_ID-unset}"}); got.stdout != "unset\n" || !got.standby {
		t.Errorf("command without TRACE_ID after commands with one = %+v, want unset, from a standby", got)
	}
	r.waitIdle(1)

	// Another launch (a variable the profile's restore reads differs) gets
	// no standby of this one, and none of its own until it repeats.
	other := command{scope: scope, script: "echo $PATH", env: map[string]string{"PATH": "/bin:/usr/bin"}}
	if got := r.run(other); got.stdout == "" || got.standby {
		t.Errorf("command of another launch = %+v, want a PATH, not from the first launch's standby", got)
	}
	time.Sleep(100 * time.Millisecond)
	r.waitIdle(1)
	r.run(other)
	r.waitIdle(2)

	// Forgetting the scope ends its standbys.
	r.forget(scope)
	r.waitNone()
}

// TestStandbyKeepsItsLaunchSandbox: a sandboxed launch's standby is held
// under that sandbox, so that the command it runs writes only beneath the
// writable roots, as a fresh replay would; an unsandboxed launch of the
// same scope never gets it.
func TestStandbyKeepsItsLaunchSandbox(t *testing.T) {
	r := newRig(t, "f() { :; }\n", Options{Max: 4})
	probe := sandbox.New(sandbox.Options{})
	defer probe.Close()
	if err := probe.Check(sandbox.Policy{ReadOnly: true}); err != nil {
		t.Skipf("this kernel cannot sandbox: %v", err)
	}
	outside := t.TempDir()
	confined := command{scope: "sandboxed", sandbox: sandbox.Policy{WritableRoots: []string{r.home}},
		script: "echo in > $HOME/in; echo out > " + outside + "/out; echo done"}
	for range 2 {
		r.run(confined)
	}
	r.waitIdle(1)
	got := r.run(confined)
	if !got.standby || got.stdout != "done\n" {
		t.Fatalf("third sandboxed command = %+v, want done from a standby", got)
	}
	if !strings.Contains(got.stderr, "Read-only file system") && !strings.Contains(got.stderr, "Permission denied") {
		t.Errorf("stderr = %q, want the write outside refused", got.stderr)
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s/out exists (%v): a standby ran a sandboxed command unconfined", outside, err)
	}
	if rep := got.p.Info().Sandbox; rep.Type != sandbox.TypeLandlock {
		t.Errorf("Info().Sandbox = %+v, want landlock", rep)
	}
	// The same scope, script and environment without the sandbox: another
	// launch, which no sandboxed standby serves.
	r.waitIdle(1)
	if got := r.run(command{scope: "sandboxed", script: "echo out > " + outside + "/free"}); got.standby {
		t.Errorf("an unsandboxed command ran in the sandboxed launch's standby")
	}
}

// standbyReady returns a rig whose bash launch of scope ran twice, so that
// its standby waits.
func standbyReady(t *testing.T, scope string) (*rig, *exec.Held) {
	t.Helper()
	r := newRig(t, "f() { :; }\n", Options{Max: 4})
	for range 2 {
		r.run(command{scope: scope, script: "true"})
	}
	return r, r.waitIdle(1)[0]
}

func TestStandbyLimitsStartAtRelease(t *testing.T) {
	r, _ := standbyReady(t, "limits")
	time.Sleep(400 * time.Millisecond) // longer than the timeout below: it must count from the release

	start := time.Now()
	got := r.run(command{scope: "limits", script: "echo started; sleep 5", timeout: 300 * time.Millisecond})
	elapsed := time.Since(start)
	if got.p.Result().Status != exec.StatusTimedOut || got.stdout != "started\n" || !got.standby {
		t.Fatalf("standby command with a 300 ms timeout = %+v, status %s; want timed_out after printing started, in a standby", got, got.p.Result().Status)
	}
	if elapsed < 250*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("timed out after %v, want about 300 ms from the start", elapsed)
	}
	r.forget("limits")
	r.waitNone()
}

func TestStandbyBounds(t *testing.T) {
	// The profile reads LAUNCH, so that each value is a launch of its own.
	r := newRig(t, "f() { :; }\nexport LAUNCH=\"$LAUNCH:profile\"\n", Options{Max: 1, Idle: time.Second})
	launch := func(n int) command {
		return command{scope: "bounds", script: "true", env: map[string]string{"LAUNCH": strconv.Itoa(n)}}
	}
	r.run(launch(1))
	r.run(launch(1))
	first := r.waitIdle(1)[0]
	r.run(launch(2))
	r.run(launch(2))
	// One idle standby at most: the second launch's replaces the first's.
	waitEnded(t, "the first launch's standby, after a second launch's with Max 1", first)
	second := r.waitIdle(1)[0]
	if second == first {
		t.Fatalf("idle standby after a second launch with Max 1 is the first launch's")
	}
	if got := r.run(launch(1)); got.standby {
		t.Errorf("first launch after its standby was ended = %+v, want it run without one", got)
	}
	// The first launch repeated: its new standby replaces the second's.
	waitEnded(t, "the second launch's standby", second)
	r.waitIdle(1)
	// Idle standbys end after Idle.
	time.Sleep(1500 * time.Millisecond)
	r.waitNone()
}

func TestStandbyDisabled(t *testing.T) {
	r := newRig(t, "f() { :; }\n", Options{Max: 0})
	for range 3 {
		if got := r.run(command{scope: "off", script: "f && echo ok"}); got.stdout != "ok\n" || got.standby {
			t.Fatalf("with Max 0: %+v, want ok without a standby", got)
		}
	}
	time.Sleep(200 * time.Millisecond)
	r.pool.mu.Lock()
	idle, filling, seen := len(r.pool.idle), len(r.pool.filling), len(r.pool.seen)
	r.pool.mu.Unlock()
	if idle+filling+seen != 0 {
		t.Fatalf("with Max 0: %d idle, %d filling, %d launches seen; want none", idle, filling, seen)
	}
	if n := r.procs.Running(); n != 0 {
		t.Errorf("with Max 0, after the commands: %d processes run, want none", n)
	}
}

func TestShutdownEndsStandbys(t *testing.T) {
	r, _ := standbyReady(t, "shutdown")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.procs.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	if slices.ContainsFunc(r.seen, func(h *exec.Held) bool { return !ended(h) }) {
		t.Fatalf("a standby still runs after the manager's Shutdown returned")
	}
}

func TestStandbyOfAReplacedDirectoryIsNotUsed(t *testing.T) {
	r := newRig(t, "f() { :; }\n", Options{Max: 4})
	work := filepath.Join(r.home, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	c := command{scope: "replaced", script: "ls -A", cwd: work}
	for range 2 {
		r.run(c)
	}
	old := r.waitIdle(1)[0]
	// The directory is removed and made again: the standby sits in the old one.
	if err := os.Remove(work); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "new-file"), "")
	if got := r.run(c); got.stdout != "new-file\n" || got.standby {
		t.Fatalf("command after its cwd was replaced = %+v, want new-file listed by a fresh shell", got)
	}
	waitEnded(t, "the standby in the replaced directory", old)
	r.forget("replaced")
	r.waitNone()
}

func TestStandbyOfAStaleSnapshotIsReplaced(t *testing.T) {
	r := newRig(t, "version() { echo one; }\n", Options{Max: 4})
	c := command{scope: "stale", script: "version"}
	for range 2 {
		r.run(c)
	}
	old := r.waitIdle(1)[0]
	writeFile(t, filepath.Join(r.home, ".bashrc"), "version() { echo two; }\n# longer, so that the stamp changes\n")
	if got := r.run(c); got.stdout != "two\n" || got.standby {
		t.Fatalf("command after the profile changed = %+v, want two from a fresh capture, not the old standby", got)
	}
	// The stale snapshot's standby ends; the new one's takes its place.
	waitEnded(t, "the stale snapshot's standby", old)
	if next := r.waitIdle(1)[0]; next == old {
		t.Fatalf("idle standby after the profile changed is the stale one")
	}
	if got := r.run(c); got.stdout != "two\n" || !got.standby {
		t.Fatalf("next command = %+v, want two from the new standby", got)
	}
}

// TestStandbyPoolGrowsWithArrivals: a launch whose commands come two at
// once keeps two standbys, up to PerLaunch, so that the next two find one
// each; standbys that wait for nothing end, and the launch keeps fewer.
func TestStandbyPoolGrowsWithArrivals(t *testing.T) {
	r := newRig(t, "f() { echo f; }\n", Options{Max: 4, PerLaunch: 2, Idle: 2 * time.Second})
	c := command{scope: "burst", script: "f"}
	r.run(c)
	r.run(c)
	r.waitIdle(1)
	both := func() (standbys int) {
		results := make(chan ran, 2)
		for range 2 {
			go func() { results <- r.run(c) }()
		}
		for range 2 {
			if got := <-results; got.stdout != "f\n" {
				t.Errorf("command of a burst = %+v, want f", got)
			} else if got.standby {
				standbys++
			}
		}
		return standbys
	}
	if n := both(); n != 1 {
		t.Fatalf("two at once with one standby waiting: %d ran in a standby, want 1", n)
	}
	// The one that found none makes the launch keep two.
	r.waitIdle(2)
	if n := both(); n != 2 {
		t.Errorf("two at once with two standbys waiting: %d ran in a standby, want 2", n)
	}
	r.waitIdle(2)
	r.pool.mu.Lock()
	var key launchKey
	for k := range r.pool.want {
		key = k
	}
	want := r.pool.want[key]
	r.pool.mu.Unlock()
	if want != 2 {
		t.Errorf("the launch keeps %d standbys, want 2 (PerLaunch)", want)
	}
	// Nothing comes: they end after Idle, and the launch keeps one again.
	r.waitNone()
	r.pool.mu.Lock()
	want = r.pool.want[key]
	r.pool.mu.Unlock()
	if want != 1 {
		t.Errorf("after its standbys waited for nothing the launch keeps %d, want 1", want)
	}
}
