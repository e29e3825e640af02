package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The fidelity suite measures issue 16: can a command tell a replayed shell
// from the login shell it stands for? For every profile of
// fidelity_profiles_test.go and every shell (bash, zsh, sh), it runs the
// probe of fidelity_probe_test.go
//
//   - login:   in the real login shell, env -i HOME=... PATH=... shell -lc probe,
//     in the same cwd;
//   - capture: through POST /exec with shellSnapshot, as the request that
//     captures the snapshot (and replays it into its own command);
//   - replay:  through POST /exec again, a fresh replay of the cached snapshot;
//   - standby: through POST /exec once the server has a standby shell waiting
//     for the launch (skipped, with the reason, where it offers none);
//
// and compares each fact a mode printed with the login shell's. It only
// speaks the contract's JSON to a server started by run on 127.0.0.1:0, so
// that it survives any refactoring of the packages behind it.
//
// A difference listed in knownDifferences (fidelity_known_test.go) is
// reported as known; any other fails the test, and so does a listed one
// that no longer differs, so that the table can only shrink. The report:
//
//	go test -run TestFidelity -v ./cmd/server -args -fidelity.report

var fidelityReport = flag.Bool("fidelity.report", false, "TestFidelity: print every difference, known ones too, and a table entry for each unknown one")

// The modes compared with the login shell.
const (
	modeLogin   = "login"
	modeCapture = "capture"
	modeReplay  = "replay"
	modeStandby = "standby"
)

var fidelityModes = []string{modeCapture, modeReplay, modeStandby}

// fidelityWorkers is how many cells run at once, each on a server of its own
// (so that a server's standby counters describe one cell). The servers are
// processes of their own, as in production: three in this process would
// reap each other's commands, and one would reap the login shells that
// runLogin starts in groups of their own (inProcessServers).
const fidelityWorkers = 3

// fidelityOutputBytes is the maxOutputBytes of the standby launch. Every
// other request takes a number of its own off it: maxOutputBytes is part of a
// launch, so a fresh replay never meets a standby shell, and only the
// standby launch repeats.
const fidelityOutputBytes = 1 << 20

// shellUnderTest is a shell and the path it is started by.
type shellUnderTest struct{ name, path string }

// fidelityDiff is one fact that a mode printed otherwise than the login shell.
type fidelityDiff struct {
	profile, shell, mode, key string
	login, got                string
	known                     *knownDifference
}

// fidelityCell is what one profile in one shell gave.
type fidelityCell struct {
	profile, shell string
	probes         int               // facts compared, all modes
	ran            map[string]bool   // modes compared
	skipped        map[string]string // modes not compared, and why
	receipts       map[string]string // what the server said of each mode's probe
	replayed       bool              // the server replayed the snapshot (outcome used)
	diffs          []fidelityDiff
}

func TestFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("the fidelity suite runs real shells through the server (about 10 s)")
	}
	shells := []shellUnderTest{{"bash", "/bin/bash"}, {"zsh", "/bin/zsh"}, {"sh", "/bin/sh"}}
	missing := map[string]bool{}
	for _, sh := range shells {
		if _, err := os.Stat(sh.path); err != nil {
			missing[sh.name] = true
			t.Logf("%s: %v; its cells are skipped (make deps installs zsh)", sh.name, err)
		}
	}
	type job struct {
		p  *fidelityProfile
		sh shellUnderTest
	}
	jobs := make(chan job)
	var (
		mu    sync.Mutex
		cells []*fidelityCell
		wg    sync.WaitGroup
	)
	for range fidelityWorkers {
		proc := startServerProcess(t, nil)
		t.Cleanup(func() { proc.terminate(t) }) // before startServerProcess's own cleanup kills what is left
		srv := proc.testServer
		wg.Go(func() {
			for j := range jobs {
				t.Run(j.p.name+"/"+j.sh.name, func(t *testing.T) {
					c := runFidelityCell(t, srv, j.p, j.sh)
					checkKnown(t, c)
					mu.Lock()
					cells = append(cells, c)
					mu.Unlock()
				})
			}
		})
	}
	for _, p := range fidelityProfiles {
		for _, sh := range shells {
			if !missing[sh.name] && p.runs(sh.name) {
				jobs <- job{p, sh}
			}
		}
	}
	close(jobs)
	wg.Wait()

	sort.Slice(cells, func(i, j int) bool {
		return cells[i].profile+"/"+cells[i].shell < cells[j].profile+"/"+cells[j].shell
	})
	report := fidelitySummary(cells)
	t.Log(report)
	if *fidelityReport {
		fmt.Println(report)
		fmt.Println(fidelityDetails(cells))
	}
}

// runFidelityCell runs profile p in shell sh through the login shell and
// every mode, and compares them.
func runFidelityCell(t *testing.T, srv *testServer, p *fidelityProfile, sh shellUnderTest) *fidelityCell {
	home := t.TempDir()
	work := filepath.Join(home, "work")
	writeFiles(t, work, map[string]string{"a.c": "", "a.o": "", ".hidden": "", "B.txt": ""})
	writeFiles(t, home, p.files(sh.name, home))
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	if p.env != nil {
		maps.Copy(env, p.env(sh.name, home))
	}
	scripts := []fidelityScript{{"", probeScript(sh.name, p.funcs, p.probeLines(sh.name))}}
	if p.scripts != nil {
		scripts = append(scripts, p.scripts(sh.name)...)
	}
	c := &fidelityCell{profile: p.name, shell: sh.name, ran: map[string]bool{}, skipped: map[string]string{}, receipts: map[string]string{}}
	cl := &fidelityClient{srv: srv, sh: sh, cwd: work, scope: "fidelity-" + p.name + "-" + sh.name}
	// Forgetting the scope ends its standbys, so that the server's idle
	// count is the next cell's alone, also after a failure.
	t.Cleanup(func() {
		if code := srv.delete(t, "/snapshots/"+url.PathEscape(cl.scope)); code != 204 {
			t.Errorf("DELETE /snapshots/%s = %d, want 204", cl.scope, code)
		}
		if !cl.waitIdle(t, func(idle int) bool { return idle == 0 }) {
			t.Errorf("standbys of scope %s still idle 10 s after DELETE", cl.scope)
		}
	})
	results := map[string][][]fact{}

	// The capture. A profile that changes something between the capture
	// and the command captures with a bare ":" and compares no capture.
	if p.captureEnv == nil && p.edit == nil {
		facts, receipt, _ := cl.run(t, scripts[0], env, fidelityOutputBytes-100)
		results[modeCapture] = [][]fact{facts}
		c.receipts[modeCapture] = receipt
	} else {
		captureEnv := env
		if p.captureEnv != nil {
			captureEnv = p.captureEnv(sh.name, home, maps.Clone(env))
		}
		cl.run(t, fidelityScript{"", ":"}, captureEnv, fidelityOutputBytes-100)
		c.skipped[modeCapture] = "the profile changes something after the capture"
		if p.edit != nil {
			writeFiles(t, home, p.edit(sh.name, home))
		}
	}

	for _, s := range scripts {
		results[modeLogin] = append(results[modeLogin], runLogin(t, sh, work, env, s))
	}
	for i, s := range scripts {
		facts, receipt, standby := cl.run(t, s, env, fidelityOutputBytes-1-i)
		results[modeReplay] = append(results[modeReplay], facts)
		c.receipts[modeReplay] = receipt
		c.replayed = strings.HasPrefix(receipt, "used ") || strings.HasPrefix(receipt, "partial ")
		if standby {
			t.Errorf("replay of %q ran in a standby; the suite keeps launches apart by maxOutputBytes", s.name)
		}
	}

	// The standby launch repeats; a server that offers standbys for it
	// counts the commands (hit, miss or unfit). The second sends a variable
	// of its own, which the profile never touches: a server may serve it
	// with the same standby and fill the next one after it, which must then
	// show the scripts nothing of it. (A profile with a BASH_ENV shares no
	// standby across such requests: the third repeats the launch.)
	before := cl.standbyStats(t)
	other := maps.Clone(env)
	other["FIDELITY_OTHER_REQUEST"] = "another request's value"
	cl.run(t, fidelityScript{"", ":"}, env, fidelityOutputBytes)
	cl.run(t, fidelityScript{"", ":"}, other, fidelityOutputBytes)
	cl.run(t, fidelityScript{"", ":"}, env, fidelityOutputBytes)
	if after := cl.standbyStats(t); after.considered() == before.considered() {
		c.skipped[modeStandby] = "the server considers no standby for this launch (its standby counters did not move)"
	} else {
		for _, s := range scripts {
			if !cl.waitIdle(t, func(idle int) bool { return idle > 0 }) {
				c.skipped[modeStandby] = "no standby became idle within 10 s"
				break
			}
			facts, receipt, standby := cl.run(t, s, env, fidelityOutputBytes)
			if !standby {
				c.skipped[modeStandby] = fmt.Sprintf("a standby waited, but the server ran script %q without it (%s)", s.name, receipt)
				results[modeStandby] = nil
				break
			}
			results[modeStandby] = append(results[modeStandby], facts)
			c.receipts[modeStandby] = receipt
		}
	}

	for _, mode := range fidelityModes {
		if _, skipped := c.skipped[mode]; skipped {
			continue
		}
		c.ran[mode] = true
		// The capture runs the probe alone; a standby that stopped serving
		// has said why in skipped.
		for i, facts := range results[mode] {
			c.compare(mode, results[modeLogin][i], facts)
		}
	}
	return c
}

// fidelityScript is a script a profile runs, beside the probe (name "").
// Its facts are keyed "name: fact".
type fidelityScript struct{ name, text string }

// compare adds to c a difference for every fact of got that is not the
// login shell's.
func (c *fidelityCell) compare(mode string, login, got []fact) {
	want := map[string]string{}
	keys := []string{}
	for _, f := range login {
		want[f.key] = f.value
		keys = append(keys, f.key)
	}
	have := map[string]string{}
	for _, f := range got {
		have[f.key] = f.value
		if _, ok := want[f.key]; !ok {
			keys = append(keys, f.key)
		}
	}
	for _, k := range keys {
		c.probes++
		w, inLogin := want[k]
		g, inGot := have[k]
		if !inLogin {
			w = "<absent>"
		}
		if !inGot {
			g = "<absent>"
		}
		if inLogin != inGot || w != g {
			c.diffs = append(c.diffs, fidelityDiff{profile: c.profile, shell: c.shell, mode: mode, key: k, login: w, got: g})
		}
	}
}

// fidelityClient runs one cell's requests on a server.
type fidelityClient struct {
	srv   *testServer
	sh    shellUnderTest
	cwd   string
	scope string
}

// run posts s as shell -lc to /exec with a shell snapshot and returns its
// facts and a short description of the receipt.
func (cl *fidelityClient) run(t *testing.T, s fidelityScript, env map[string]string, maxOutput int) (facts []fact, receipt string, standby bool) {
	t.Helper()
	argv := []string{cl.sh.path, "-lc", s.text}
	code, got, _ := cl.srv.post(t, "/exec", map[string]any{
		"argv":           argv,
		"cwd":            cl.cwd,
		"env":            env,
		"maxOutputBytes": maxOutput,
		"timeoutMs":      30000,
		"shellSnapshot":  map[string]any{"scopeId": cl.scope, "shell": map[string]string{"name": cl.sh.name, "path": cl.sh.path}},
	})
	if code != 200 {
		t.Fatalf("POST /exec %s -lc %.40q = %d %v", cl.sh.name, s.text, code, got)
	}
	if got["stdoutTruncated"] == true || got["stderrTruncated"] == true {
		t.Fatalf("POST /exec %s -lc %.40q: output truncated", cl.sh.name, s.text)
	}
	pid := int(got["pid"].(float64))
	exit := fmt.Sprint(got["status"])
	switch exit {
	case "exited":
		exit += " " + fmt.Sprint(got["exitCode"])
	case "signaled":
		exit += " " + fmt.Sprint(got["signal"])
	}
	res := probeResult{stdout: outputOf(t, got, "stdout"), stderr: outputOf(t, got, "stderr"), exit: exit, pid: pid}
	if _, body := cl.srv.get(t, "/processes/"+url.PathEscape(got["processId"].(string))); len(body) > 0 {
		var p struct{ Argv []string }
		if err := json.Unmarshal(body, &p); err == nil {
			res.argv = p.Argv
		}
	}
	r, _ := got["snapshot"].(map[string]any)
	receipt = fmt.Sprintf("%v %v", r["outcome"], r["state"])
	if reason, ok := r["reason"].(string); ok {
		receipt += " (" + reason + ")"
	}
	return res.facts(s), receipt, r["standby"] == true
}

// outputOf returns a stream of an /exec answer, which comes as text or,
// when it is not UTF-8, as base64.
func outputOf(t *testing.T, got map[string]any, stream string) string {
	if s, ok := got[stream].(string); ok {
		return s
	}
	if b64, ok := got[stream+"Base64"].(string); ok {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("%sBase64: %v", stream, err)
		}
		return string(b)
	}
	return ""
}

// standbyCounts are the server's standby counters.
type standbyCounts struct{ Idle, Hit, Miss, Unfit int }

// considered counts the commands the server thought a standby could serve.
func (s standbyCounts) considered() int { return s.Hit + s.Miss + s.Unfit }

func (cl *fidelityClient) standbyStats(t *testing.T) standbyCounts {
	t.Helper()
	_, body := cl.srv.get(t, "/stats")
	var st struct {
		Snapshots struct{ Standby standbyCounts }
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("/stats: %v", err)
	}
	return st.Snapshots.Standby
}

// waitIdle waits until the server's count of idle standbys satisfies ok,
// for at most 10 s.
func (cl *fidelityClient) waitIdle(t *testing.T, ok func(idle int) bool) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ok(cl.standbyStats(t).Idle) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// runLogin runs s in the real login shell: env -i with exactly env, in dir,
// in a process group of its own as the server starts its commands.
func runLogin(t *testing.T, sh shellUnderTest, dir string, env map[string]string, s fidelityScript) []fact {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := []string{sh.path, "-lc", s.text}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("login %s -lc: %v", sh.name, err)
	}
	exit := "exited " + strconv.Itoa(cmd.ProcessState.ExitCode())
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit = "signaled " + unix.SignalName(ws.Signal())
	}
	res := probeResult{stdout: stdout.String(), stderr: stderr.String(), exit: exit, pid: cmd.ProcessState.Pid(), argv: argv}
	return res.facts(s)
}

// probeResult is what one run of a script gave.
type probeResult struct {
	stdout, stderr, exit string
	pid                  int
	argv                 []string // as the client sees it (GET /processes)
}

// childJob matches the PID in bash's report of a child killed by a signal
// ("line 14:  4242 Segmentation fault", the PID padded to five columns).
var childJob = regexp.MustCompile(`(: |^) *\d+ (Segmentation fault|Aborted|Killed|Terminated|Hangup)`)

// facts returns r's facts: the probe's, the exit, stderr and the argv, with
// the shell's PID in /proc paths (and its children's, in bash's job reports)
// made "<pid>", since it differs between any two runs. Only those places:
// the bare number could also be a value (a limit, a size) that must compare.
func (r probeResult) facts(s fidelityScript) []fact {
	facts := parseProbe(r.stdout, s.text)
	facts = append(facts, fact{"exit", r.exit}, fact{"stderr", r.stderr}, fact{"api argv", summarizeArgv(r.argv, s.text)})
	procPID := "/proc/" + strconv.Itoa(r.pid) + "/"
	for i := range facts {
		facts[i].value = childJob.ReplaceAllString(strings.ReplaceAll(facts[i].value, procPID, "/proc/<pid>/"), "$1<pid> $2")
		if s.name != "" {
			facts[i].key = s.name + ": " + facts[i].key
		}
	}
	return facts
}

// summarizeArgv describes the argv of GET /processes/{id}: the script the
// client sent is shown by name only.
func summarizeArgv(argv []string, script string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case a == script:
			out[i] = "<the script>"
		case len(a) > 60:
			out[i] = fmt.Sprintf("<another text of %d bytes>", len(a))
		default:
			out[i] = strconv.Quote(a)
		}
	}
	return strings.Join(out, " ")
}

// writeFiles writes files (paths relative to home) under home; a file
// starting with "#!" is made executable.
func writeFiles(t *testing.T, home string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// checkKnown fails c's test for every difference knownDifferences does not
// list, and for every entry that covers a mode of c where its difference no
// longer shows.
func checkKnown(t *testing.T, c *fidelityCell) {
	t.Helper()
	if excluded := slices.Contains(replayed(c.shell), "!"+c.profile); c.replayed == excluded {
		t.Errorf("%s %s: the server's receipt is %q; replayed(%q) must list \"!%s\" exactly when it falls back", c.profile, c.shell, c.receipts[modeReplay], c.shell, c.profile)
	}
	for i := range c.diffs {
		d := &c.diffs[i]
		for j := range knownDifferences {
			if k := &knownDifferences[j]; k.covers(c.profile, c.shell, d.mode) && k.matches(d.key) {
				d.known = k
				break
			}
		}
		if d.known == nil {
			t.Errorf("%s %s %s: %s\n  login:  %s\n  %-7s %s", d.profile, d.shell, d.mode, d.key, clip(d.login), d.mode+":", clip(d.got))
		}
	}
	for j := range knownDifferences {
		k := &knownDifferences[j]
		for _, mode := range fidelityModes {
			if !c.ran[mode] || !k.covers(c.profile, c.shell, mode) {
				continue
			}
			for _, key := range k.keys {
				if !slices.ContainsFunc(c.diffs, func(d fidelityDiff) bool { return d.mode == mode && globMatch(key, d.key) }) {
					t.Errorf("%s %s %s: the known difference %q (%s) no longer shows: narrow or remove its entry", c.profile, c.shell, mode, key, k.item)
				}
			}
		}
	}
}

// clip quotes a value for a one-line report.
func clip(v string) string {
	if len(v) > 300 {
		v = v[:300] + "..."
	}
	return strconv.Quote(v)
}

// globMatch reports whether s matches pattern, in which * stands for any
// text and every other character for itself.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// fidelitySummary is the report's head: N probes, M differences, then
// the differences by shell and mode, and by cause (each cause's differences
// in bash, zsh and sh, and its distinct shell and fact pairs).
func fidelitySummary(cells []*fidelityCell) string {
	probes, diffs, unknown := 0, 0, 0
	grid := map[[2]string]int{} // shell, mode
	type causeCount struct {
		byShell  map[string]int
		distinct map[string]bool
	}
	causes := map[string]*causeCount{}
	distinct := map[string]bool{}
	profiles := map[string]bool{}
	for _, c := range cells {
		probes += c.probes
		profiles[c.profile] = true
		for _, d := range c.diffs {
			diffs++
			grid[[2]string{d.shell, d.mode}]++
			item := "unknown"
			if d.known != nil {
				item = d.known.item
			} else {
				unknown++
			}
			if causes[item] == nil {
				causes[item] = &causeCount{byShell: map[string]int{}, distinct: map[string]bool{}}
			}
			causes[item].byShell[d.shell]++
			causes[item].distinct[d.shell+" "+d.key] = true
			distinct[d.shell+" "+d.key] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d probes, %d differences (%d unknown); %d cells of %d profiles; %d distinct shell and fact pairs; %d causes\n",
		probes, diffs, unknown, len(cells), len(profiles), len(distinct), len(causes))
	shells := []string{"bash", "zsh", "sh"}
	fmt.Fprintf(&b, "%-8s %8s %8s %8s\n", "", modeCapture, modeReplay, modeStandby)
	for _, sh := range shells {
		fmt.Fprintf(&b, "%-8s %8d %8d %8d\n", sh, grid[[2]string{sh, modeCapture}], grid[[2]string{sh, modeReplay}], grid[[2]string{sh, modeStandby}])
	}
	fmt.Fprintf(&b, "%-42s %6s %6s %6s %9s\n", "cause", "bash", "zsh", "sh", "distinct")
	for _, item := range slices.Sorted(maps.Keys(causes)) {
		cc := causes[item]
		fmt.Fprintf(&b, "%-42s %6d %6d %6d %9d\n", item, cc.byShell["bash"], cc.byShell["zsh"], cc.byShell["sh"], len(cc.distinct))
	}
	skips := map[string]map[string][]string{} // reason -> shell -> profiles
	for _, c := range cells {
		for mode, why := range c.skipped {
			reason := mode + ": " + why
			if skips[reason] == nil {
				skips[reason] = map[string][]string{}
			}
			skips[reason][c.shell] = append(skips[reason][c.shell], c.profile)
		}
	}
	var fellBack []string
	for _, c := range cells {
		if !c.replayed {
			fellBack = append(fellBack, c.profile+"/"+c.shell)
		}
	}
	fmt.Fprintf(&b, "not replayed (the capture failed; the server ran the login shell): %v\n", fellBack)
	for _, reason := range slices.Sorted(maps.Keys(skips)) {
		fmt.Fprintf(&b, "skipped %s:", reason)
		for _, sh := range shells {
			if ps := skips[reason][sh]; len(ps) > 0 {
				if len(ps) <= 3 {
					fmt.Fprintf(&b, " %s %v", sh, ps)
				} else {
					fmt.Fprintf(&b, " %s %d cells", sh, len(ps))
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// fidelityDetails lists every difference, the modes that share one on a
// line, and then a knownDifferences entry for each unknown one.
func fidelityDetails(cells []*fidelityCell) string {
	var b strings.Builder
	type row struct{ profile, shell, key, login, got, known string }
	modes := map[row][]string{}
	var rows []row
	for _, c := range cells {
		for _, d := range c.diffs {
			known := "UNKNOWN"
			if d.known != nil {
				known = d.known.item
			}
			r := row{d.profile, d.shell, d.key, d.login, d.got, known}
			if modes[r] == nil {
				rows = append(rows, r)
			}
			modes[r] = append(modes[r], d.mode)
		}
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %s [%s] %s (%s)\n  login: %s\n  got:   %s\n", r.profile, r.shell, strings.Join(modes[r], ","), r.key, r.known, clip(r.login), clip(r.got))
	}
	b.WriteString(suggestKnown(cells))
	return b.String()
}

// suggestKnown drafts knownDifferences entries for the unknown
// differences: one per shell, fact and set of modes, naming the profiles
// where it shows (replayed when it shows in every profile the server
// replays), and the modes unless it shows in every mode that ran.
func suggestKnown(cells []*fidelityCell) string {
	type group struct{ shell, key, modes string }
	profiles := map[group][]string{}
	ranIn := map[string][]string{} // shell -> profiles
	for _, c := range cells {
		ranIn[c.shell] = append(ranIn[c.shell], c.profile)
		modesOf := map[string][]string{}
		for _, d := range c.diffs {
			if d.known == nil {
				modesOf[d.key] = append(modesOf[d.key], d.mode)
			}
		}
		for key, ms := range modesOf {
			modes := "nil"
			if len(ms) != len(c.ran) {
				modes = fmt.Sprintf("%#v", ms)
			}
			g := group{c.shell, key, modes}
			profiles[g] = append(profiles[g], c.profile)
		}
	}
	if len(profiles) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n// drafts for knownDifferences:\n")
	groups := slices.Collect(maps.Keys(profiles))
	sort.Slice(groups, func(i, j int) bool {
		return groups[i].shell+" "+groups[i].key+" "+groups[i].modes < groups[j].shell+" "+groups[j].key+" "+groups[j].modes
	})
	for _, g := range groups {
		ps := fmt.Sprintf("%#v", profiles[g])
		all := true
		for _, p := range ranIn[g.shell] {
			if slices.Contains(replayed(g.shell), "!"+p) == slices.Contains(profiles[g], p) {
				all = false
			}
		}
		if all {
			ps = fmt.Sprintf("replayed(%q)", g.shell)
		}
		fmt.Fprintf(&b, "{item: \"?\", shells: []string{%q}, profiles: %s, modes: %s, keys: []string{%q}, why: \"\"},\n", g.shell, ps, g.modes, g.key)
	}
	return b.String()
}
