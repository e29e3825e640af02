package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/snapexec/snapexec/internal/testserver"
)

// chromium is where Debian's chromium package puts the browser.
const chromium = "/usr/bin/chromium"

// record is what the page did, as the DevTools events tell it: every
// request it sent, the Authorization header of its API calls, and its
// uncaught exceptions and security (CSP) errors.
type record struct {
	mu       sync.Mutex
	urls     []string
	auth     map[string]string // URL path -> Authorization header sent
	problems []string
	logs     []string
}

// listen runs in chromedp's read loop: it must only record.
func (b *record) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Request == nil {
			return
		}
		b.urls = append(b.urls, ev.Request.Method+" "+ev.Request.URL)
		if a, ok := ev.Request.Headers["Authorization"].(string); ok {
			if b.auth == nil {
				b.auth = map[string]string{}
			}
			b.auth[ev.Request.URL] = a
		}
	case *runtime.EventExceptionThrown:
		if d := ev.ExceptionDetails; d != nil {
			text := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text += " " + d.Exception.Description
			}
			b.problems = append(b.problems, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
		}
	case *cdplog.EventEntryAdded:
		if e := ev.Entry; e != nil {
			line := fmt.Sprintf("%s %s: %s %s", e.Level, e.Source, e.Text, e.URL)
			b.logs = append(b.logs, line)
			if strings.Contains(e.Text, "Content Security Policy") || e.Source == "security" {
				b.problems = append(b.problems, "security: "+line)
			}
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == "error" || ev.Type == "assert" {
			var parts []string
			for _, a := range ev.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, string(a.Value))
				}
			}
			b.problems = append(b.problems, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	}
}

func (b *record) snapshot() (urls []string, auth map[string]string, problems, logs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	auth = map[string]string{}
	for k, v := range b.auth {
		auth[k] = v
	}
	return append([]string(nil), b.urls...), auth, append([]string(nil), b.problems...), append([]string(nil), b.logs...)
}

// browser is one headless Chromium tab with its record; do and run bound each
// step with its own timeout.
type browser struct {
	t   *testing.T
	ctx context.Context
	rec *record
}

// startBrowser starts Debian's Chromium headless with a fresh profile. The
// whole browser lives at most as long as ctx.
func startBrowser(t *testing.T, ctx context.Context) *browser {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s (%v): install it with `apt-get install -y chromium` to run the browser test", chromium, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true), // screenshots show the page, not a scrollbar strip
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	rec := &record{}
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(rec.listen))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first Do starts the browser and binds its life to tabCtx (bounded by
	// ctx), so it gets no shorter timeout of its own.
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return &browser{t: t, ctx: tabCtx, rec: rec}
}

// do runs steps within d, and on failure reports what the page showed.
func (b *browser) do(what string, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v\npage state:\n%s", what, err, b.pageState())
	}
}

// text returns the text of the first element sel matches, within 5 s.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v\npage state:\n%s", sel, err, b.pageState())
	}
	return strings.TrimSpace(s)
}

// evaluate evaluates expr within 5 s.
func evaluate[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// pageState is a short dump of the dashboard for failure messages.
func (b *browser) pageState() string {
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const q = (s) => document.querySelector(s);
		const rows = (s) => Array.from(document.querySelectorAll(s)).map((r) => "  " + JSON.stringify(r.dataset) + " " + r.innerText.replace(/\s+/g, " ")).join("\n");
		return "conn: " + (q("[data-testid=conn-status]")?.dataset.state) + " " + q("[data-testid=conn-status]")?.textContent +
			"\naction-result: " + JSON.stringify(q("[data-testid=action-result]")?.dataset) + " " + q("[data-testid=action-result]")?.textContent +
			"\nsnapshot rows:\n" + rows("[data-testid=snapshot-row]") +
			"\nprocess rows:\n" + rows("[data-testid=process-row]");
	})()`))
	if err != nil {
		return "(cannot read the page: " + err.Error() + ")"
	}
	_, _, problems, logs := b.rec.snapshot()
	return s + "\nbrowser problems: " + strings.Join(problems, "; ") + "\nbrowser log: " + strings.Join(logs, "; ")
}

// screenshot saves a full-page PNG under dir and prints its path.
func (b *browser) screenshot(dir, name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	// From the top, so that the sticky header is where it belongs.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		b.t.Fatalf("scroll to the top: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
	fmt.Println("dashboard screenshot:", path)
}

// checkSameOrigin fails on any request the page sent anywhere but origin
// (data: URLs aside), and on uncaught exceptions or CSP errors.
func (b *browser) checkSameOrigin(origin string, want ...string) {
	b.t.Helper()
	urls, _, problems, _ := b.rec.snapshot()
	if len(urls) == 0 {
		b.t.Errorf("no network events were recorded")
	}
	for _, u := range urls {
		_, target, _ := strings.Cut(u, " ")
		if strings.HasPrefix(target, "data:") {
			continue
		}
		if !strings.HasPrefix(target, origin+"/") {
			b.t.Errorf("the page sent a request off the server: %s (origin %s)", u, origin)
		}
	}
	for _, w := range want {
		found := false
		for _, u := range urls {
			if strings.HasPrefix(u, w) {
				found = true
				break
			}
		}
		if !found {
			b.t.Errorf("no request %q among the page's requests:\n%s", w, strings.Join(urls, "\n"))
		}
	}
	for _, p := range problems {
		b.t.Errorf("browser: %s", p)
	}
}

// artifactDir is where screenshots go: the test's artifact directory (kept
// under the output directory with go test -artifacts), or SNAPEXEC_ARTIFACTS
// when set.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("SNAPEXEC_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.ArtifactDir()
}

func selector(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// TestDashboard drives the dashboard at / in headless Chromium against the
// real server: a prewarm through the form, a failing scope's badge and
// countdown, forgetting it, terminating a process, and no request leaving
// the server.
func TestDashboard(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s: install it with `apt-get install -y chromium` to run the browser test", chromium)
	}
	// Started first: the first Start of a test binary builds the server,
	// which the browser's bound below need not cover.
	s := testserver.Start(t, testserver.Options{NoToken: true, Args: []string{"--grace", "300ms"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)

	b.do("load /", 15*time.Second,
		chromedp.Navigate(s.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="conn-status"][data-state="connected"]`)),
	)
	if v := b.text(`[data-testid="version"]`); v == "" || v == "–" {
		t.Errorf("version shows %q, want the server's version", v)
	}
	if up := b.text(`[data-testid="uptime"]`); up == "" || up == "–" {
		t.Errorf("uptime shows %q", up)
	}
	// The count is the server process's, the browser's own daemons (a crash
	// handler that forks away) apart.
	if esc := b.text(`[data-testid="sum-escaped"]`); !regexp.MustCompile(`^\d+ escaped$`).MatchString(esc) {
		t.Errorf("the processes tile shows %q beside its counts, want the number escaped", esc)
	}
	if ss := b.text(`[data-testid="sum-sessions"]`); !regexp.MustCompile(`^\d+ / \d+$`).MatchString(ss) {
		t.Errorf("the sessions tile shows %q, want held / running", ss)
	}
	for _, state := range []string{"cache_hit", "prewarm_ready", "on_demand", "capture_pending", "prewarm_pending", "unavailable"} {
		b.do("outcome row "+state, 5*time.Second, chromedp.WaitVisible(chromedp.CSS(selector(`[data-testid="outcome-row"][data-state=%q]`, state))))
	}

	// 1. Prewarm a good scope through the form: sh has no profile to fail.
	cwd := t.TempDir()
	good := "dash-good"
	b.do("prewarm through the form", 20*time.Second,
		chromedp.SetValue(chromedp.CSS("#pw-scope"), good),
		chromedp.SetValue(chromedp.CSS("#pw-shell"), "sh"),
		chromedp.SetValue(chromedp.CSS("#pw-path"), "/bin/sh"),
		chromedp.SetValue(chromedp.CSS("#pw-cwd"), cwd),
		chromedp.Click(chromedp.CSS(`[data-testid="prewarm-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="action-result"][data-action="prewarm"][data-status="ok"]`)),
		chromedp.WaitVisible(chromedp.CSS(selector(`[data-testid="snapshot-row"][data-scope=%q] [data-testid="state-badge"][data-state="ready"]`, good))),
	)
	goodRow := selector(`[data-testid="snapshot-row"][data-scope=%q]`, good)
	if got := b.text(goodRow + ` [data-testid="state-badge"]`); got != "ready" {
		t.Errorf("good scope badge = %q, want ready", got)
	}
	if got := b.text(goodRow + ` td.prewarmed`); got != "yes" {
		t.Errorf("good scope prewarmed = %q, want yes", got)
	}
	if got := b.text(goodRow + ` td.cwd`); got != cwd {
		t.Errorf("good scope cwd = %q, want %q", got, cwd)
	}
	if got := b.text(`[data-testid="action-result"]`); !strings.Contains(got, good) {
		t.Errorf("prewarm result line = %q, want it to name the scope", got)
	}

	// A prewarm that fails shows the problem's code and detail.
	b.do("failing prewarm through the form", 15*time.Second,
		chromedp.SetValue(chromedp.CSS("#pw-scope"), "dash-broken"),
		chromedp.SetValue(chromedp.CSS("#pw-path"), "/nonexistent/sh"),
		chromedp.Click(chromedp.CSS(`[data-testid="prewarm-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="action-result"][data-action="prewarm"][data-status="error"]`)),
	)
	if got := b.text(`[data-testid="action-result"]`); !regexp.MustCompile(`Prewarm of “dash-broken” failed: [a-z_]+ \(\d{3}\)`).MatchString(got) {
		t.Errorf("failed prewarm result line = %q, want the scope, the problem code and status", got)
	}

	// A login terminal's snapshot: the form's checkbox asks for it (sh has
	// none: 400 on terminal), and its row says so beside the shell.
	b.do("terminal prewarm of sh through the form", 15*time.Second,
		chromedp.SetValue(chromedp.CSS("#pw-scope"), "dash-sh-terminal"),
		chromedp.SetValue(chromedp.CSS("#pw-path"), "/bin/sh"),
		chromedp.Click(chromedp.CSS(`[data-testid="prewarm-terminal"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="prewarm-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="action-result"][data-action="prewarm"][data-status="error"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="prewarm-terminal"]`)),
	)
	if got := b.text(`[data-testid="action-result"]`); !strings.Contains(got, "invalid_request (400)") || !strings.Contains(got, "terminal") {
		t.Errorf("terminal prewarm of sh result line = %q, want invalid_request (400) on terminal", got)
	}
	termHome := t.TempDir()
	if code, got := post(t, s.URL, "/snapshots/dash-terminal/prewarm", map[string]any{
		"shell": map[string]string{"name": "bash", "path": "/bin/bash"}, "cwd": termHome, "terminal": true,
		"env": map[string]string{"HOME": termHome, "PATH": "/usr/bin:/bin"},
	}); code != http.StatusOK {
		t.Fatalf("POST /snapshots/dash-terminal/prewarm (terminal) = %d %v", code, got)
	}
	termRow := selector(`[data-testid="snapshot-row"][data-scope=%q]`, "dash-terminal")
	b.do("terminal snapshot row", 10*time.Second, chromedp.WaitVisible(chromedp.CSS(termRow)))
	if got := b.text(termRow + ` td.shell`); got != "bash · terminal" {
		t.Errorf("a login terminal's snapshot row shows shell %q, want bash · terminal", got)
	}

	// 2. A failing scope: the form sends no env, so it comes from an /exec
	// whose login shell exits 7.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, ".bashrc"), []byte("exit 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failing := "dash-failing"
	code, got := post(t, s.URL, "/exec", map[string]any{
		"argv":          []string{"/bin/bash", "-lc", "true"},
		"cwd":           bad,
		"env":           map[string]string{"HOME": bad, "PATH": "/usr/bin:/bin"},
		"shellSnapshot": map[string]any{"scopeId": failing, "shell": map[string]string{"name": "bash", "path": "/bin/bash"}},
	})
	if code != http.StatusOK {
		t.Fatalf("POST /exec with the failing profile = %d %v", code, got)
	}
	failRow := selector(`[data-testid="snapshot-row"][data-scope=%q]`, failing)
	b.do("failing scope badge and countdown", 10*time.Second,
		chromedp.WaitVisible(chromedp.CSS(failRow+` [data-testid="state-badge"][data-state="failed"]`)),
		chromedp.WaitVisible(chromedp.CSS(failRow+` [data-testid="countdown"]`)),
	)
	if got := b.text(failRow + ` [data-testid="state-badge"]`); got != "failed" {
		t.Errorf("failing badge = %q, want failed", got)
	}
	if got := b.text(failRow + ` [data-testid="countdown"]`); !regexp.MustCompile(`^retry (in \d+(m \d+)?s|due|on next use)$`).MatchString(got) {
		t.Errorf("countdown = %q, want retry in Ns, retry due or retry on next use", got)
	}
	if got := b.text(failRow + ` [data-testid="error-reason"]`); got == "" {
		t.Errorf("failing scope shows no lastError reason")
	}
	if got := b.text(failRow + ` td.attempts`); !regexp.MustCompile(`^\d+ of \d+$`).MatchString(got) {
		t.Errorf("attempts = %q, want \"N of M\"", got)
	}
	// The badge is amber, not the ready green: the colour comes from the state.
	failedBG := evaluate[string](b, `getComputedStyle(document.querySelector('`+failRow+` [data-testid="state-badge"]')).backgroundColor`)
	readyBG := evaluate[string](b, `getComputedStyle(document.querySelector('`+goodRow+` [data-testid="state-badge"]')).backgroundColor`)
	if failedBG == readyBG {
		t.Errorf("failed and ready badges share the colour %s", failedBG)
	}
	b.screenshot(artifactDir(t), "dashboard-failing.png")

	// 3. Forget the failing scope through its button.
	b.do("forget through the page", 10*time.Second,
		chromedp.Click(chromedp.CSS(failRow+` [data-testid="forget-button"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="action-result"][data-action="forget"][data-status="ok"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(failRow)),
	)
	if got := b.text(`[data-testid="action-result"]`); !strings.Contains(got, failing) {
		t.Errorf("forget result line = %q, want it to name the scope", got)
	}
	if entries := scopes(t, s.URL); slices.Contains(entries, failing) || !slices.Contains(entries, good) {
		t.Errorf("GET /snapshots scopes after forget = %v, want %s kept and %s gone", entries, good, failing)
	}
	// A later poll does not bring the row back.
	waitNextPoll(b)
	if n := evaluate[int](b, `document.querySelectorAll('`+failRow+`').length`); n != 0 {
		t.Errorf("the forgotten scope's row came back after a poll")
	}
	b.do("good scope still listed", 5*time.Second, chromedp.WaitVisible(chromedp.CSS(goodRow)))

	// 4. Terminate a running process through its button.
	code, got = post(t, s.URL, "/processes", map[string]any{"argv": []string{"sleep", "30"}})
	if code != http.StatusCreated {
		t.Fatalf("POST /processes = %d %v, want 201", code, got)
	}
	id, _ := got["processId"].(string)
	if id == "" {
		t.Fatalf("POST /processes gave no processId: %v", got)
	}
	procRow := selector(`[data-testid="process-row"][data-process-id=%q]`, id)
	b.do("the running process's row", 15*time.Second, chromedp.WaitVisible(chromedp.CSS(procRow+`[data-status="running"] [data-testid="attach-link"]`)))
	if href := evaluate[string](b, `document.querySelector('`+procRow+` [data-testid="attach-link"]').getAttribute("href")`); href != "/ui/terminal.html#p="+id {
		t.Errorf("the Attach link of a running process goes to %q, want its terminal view", href)
	}
	b.do("terminate through the page", 15*time.Second,
		chromedp.WaitVisible(chromedp.CSS(procRow+`[data-status="running"] [data-testid="terminate-button"]`)),
		chromedp.Click(chromedp.CSS(procRow+` [data-testid="terminate-button"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="action-result"][data-action="terminate"][data-status="ok"]`)),
		chromedp.WaitVisible(chromedp.CSS(procRow+`[data-status="terminated"] [data-testid="status-badge"][data-status="terminated"]`)),
	)
	if got := b.text(procRow + ` td.argv`); got != "sleep 30" {
		t.Errorf("argv cell = %q, want sleep 30", got)
	}
	if got := b.text(procRow + ` td.exit`); got == "" || got == "–" {
		t.Errorf("exit cell of the terminated process = %q, want its signal or code", got)
	}
	if n := evaluate[int](b, `document.querySelectorAll('`+procRow+` [data-testid="terminate-button"]').length`); n != 0 {
		t.Errorf("a terminated process still has a Terminate button")
	}
	if n := evaluate[int](b, `document.querySelectorAll('`+procRow+` [data-testid="attach-link"]').length`); n != 0 {
		t.Errorf("a terminated process still has an Attach link")
	}

	// 5. Screenshots: the whole page, then narrow and dark.
	dir := artifactDir(t)
	b.screenshot(dir, "dashboard.png")
	b.do("narrow viewport", 5*time.Second, chromedp.EmulateViewport(375, 800))
	waitNextPoll(b) // the chart is redrawn at the new width
	if w := evaluate[int](b, `document.documentElement.scrollWidth`); w > 375 {
		t.Errorf("at 375 px the page is %d px wide: it scrolls sideways", w)
	}
	b.screenshot(dir, "dashboard-narrow.png")
	b.do("dark mode", 5*time.Second, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}))
	if bg := evaluate[string](b, `getComputedStyle(document.body).backgroundColor`); bg == "rgb(245, 246, 248)" || bg == "rgb(255, 255, 255)" {
		t.Errorf("dark mode background = %s, still light", bg)
	}
	b.screenshot(dir, "dashboard-narrow-dark.png")

	// 6. Nothing the page loaded or called left the server.
	b.checkSameOrigin(s.URL,
		"GET "+s.URL+"/ui/app.js", "GET "+s.URL+"/ui/style.css",
		"GET "+s.URL+"/stats", "GET "+s.URL+"/snapshots", "GET "+s.URL+"/processes",
		"POST "+s.URL+"/snapshots/"+good+"/prewarm", "DELETE "+s.URL+"/snapshots/"+failing,
		"DELETE "+s.URL+"/processes/",
	)
}

// TestDashboardToken: with a token configured, the page loads (its static
// files are public), shows the token prompt on 401, and once the token is
// entered sends it as a header only, never in a URL.
func TestDashboardToken(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s: install it with `apt-get install -y chromium` to run the browser test", chromium)
	}
	s := testserver.Start(t, testserver.Options{Args: []string{"--grace", "300ms"}})
	token := s.Token
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)

	b.do("load / without a token", 15*time.Second,
		chromedp.Navigate(s.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="auth-prompt"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="conn-status"][data-state="unauthorized"]`)),
	)
	b.do("enter the token", 10*time.Second,
		chromedp.SendKeys(chromedp.CSS(`[data-testid="token-input"]`), token),
		chromedp.Click(chromedp.CSS(`[data-testid="token-save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="conn-status"][data-state="connected"]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`[data-testid="auth-prompt"]`)),
	)
	if v := b.text(`[data-testid="version"]`); v == "" || v == "–" {
		t.Errorf("version shows %q after the token, want the server's", v)
	}
	if typ := evaluate[string](b, `document.querySelector('[data-testid="token-input"]').type`); typ != "password" {
		t.Errorf("token input type = %q, want password", typ)
	}
	// The token survives a reload of the tab (sessionStorage), without a prompt.
	b.do("reload", 15*time.Second,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="conn-status"][data-state="connected"]`)),
	)

	urls, auth, _, _ := b.rec.snapshot()
	for _, u := range urls {
		if strings.Contains(u, token) {
			t.Errorf("the token appeared in a URL: %s", u)
		}
	}
	if a := auth[s.URL+"/stats"]; a != "Bearer "+token {
		t.Errorf("GET /stats Authorization = %q, want the bearer token", a)
	}
	b.checkSameOrigin(s.URL, "GET "+s.URL+"/stats")
	if strings.Contains(s.Log(), token) {
		t.Errorf("the token appeared in the server's log")
	}
}

// post sends body as JSON to the server at base, without a token, and
// decodes the JSON answer.
func post(t *testing.T, base, path string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s answered %d with non-JSON %q", path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// scopes returns the scope ids GET /snapshots lists.
func scopes(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/snapshots")
	if err != nil {
		t.Fatalf("GET /snapshots: %v", err)
	}
	defer resp.Body.Close()
	var list struct {
		Entries []struct {
			ScopeID string `json:"scopeId"`
		} `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("GET /snapshots = %d, not a list: %v", resp.StatusCode, err)
	}
	var out []string
	for _, e := range list.Entries {
		out = append(out, e.ScopeID)
	}
	return out
}

// waitNextPoll waits until the page has rendered another polling round.
func waitNextPoll(b *browser) {
	b.t.Helper()
	before := b.text(`[data-testid="last-update"]`)
	ctx, cancel := context.WithTimeout(b.ctx, 6*time.Second)
	defer cancel()
	expr := `document.querySelector('[data-testid="last-update"]').textContent !== ` + jsString(before)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.t.Fatalf("no polling round after %q: %v\n%s", before, err, b.pageState())
	}
}

func jsString(s string) string {
	j, _ := json.Marshal(s)
	return string(j)
}
