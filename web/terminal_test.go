package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/snapexec/snapexec/internal/testserver"
)

// typeKeys focuses the terminal of tab ctx and types keys into it: key
// events for control keys, text as a keyboard's input method inserts it
// (a key event with text would reach xterm.js twice, as keypress and input).
func typeKeys(b *browser, ctx context.Context, keys string, opts ...chromedp.KeyOption) {
	b.t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Evaluate[chromedp.Void](`document.querySelector(".xterm-helper-textarea").focus()`)}
	for len(keys) > 0 {
		text, rest, found := strings.Cut(keys, "\r")
		if text != "" && len(opts) == 0 {
			steps = append(steps, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text})
				return err
			}))
		} else if text != "" {
			steps = append(steps, chromedp.KeyEvent(text, opts...))
		}
		if found {
			steps = append(steps, chromedp.KeyEvent("\r"))
		}
		keys = rest
	}
	if err := chromedp.Do(c, steps...); err != nil {
		b.t.Fatalf("typing %q: %v", keys, err)
	}
}

// waitScreen waits until the terminal of tab ctx shows a line that matches re.
func waitScreen(b *browser, ctx context.Context, re string) {
	b.t.Helper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	expr := `new RegExp(` + jsString(re) + `, "m").test(window.snapexecTerminal.text())`
	if _, err := chromedp.Run(c, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		screen, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`window.snapexecTerminal ? window.snapexecTerminal.text() : "(no terminal)"`))
		status, _ := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(`[data-testid="term-status"]`)))
		_, _, problems, logs := b.rec.snapshot()
		b.t.Fatalf("the terminal never showed /%s/: %v\nstatus: %s\nscreen:\n%s\nproblems: %v\nlogs: %v", re, err, status, strings.TrimRight(screen, "\n"), problems, logs)
	}
}

// TestTerminalView drives the terminal view in headless Chromium against the
// real server with a token: open a shell, type, see the answer; resize the
// window and see stty size follow; Ctrl-C ends sleep 100; a second tab
// attached to the same terminal sees what either types.
func TestTerminalView(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s: install it with `apt-get install -y chromium` to run the browser test", chromium)
	}
	s := testserver.Start(t, testserver.Options{Args: []string{"--grace", "300ms"}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)

	b.do("open the terminal page with the token", 15*time.Second,
		chromedp.Navigate(s.URL+"/"),
		chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("snapexec.token", `+jsString(s.Token)+`)`),
		chromedp.Navigate(s.URL+"/ui/terminal.html"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="open-form"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="open-shell"]`), "sh"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="open-path"]`), "/bin/sh"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="open-cwd"]`), "/tmp"),
		chromedp.Click(chromedp.CSS(`[data-testid="open-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="term-status"][data-state="ok"]`)),
	)
	waitScreen(b, b.ctx, `[$#] $`)
	typeKeys(b, b.ctx, "echo hi\r")
	waitScreen(b, b.ctx, `^hi$`)
	typeKeys(b, b.ctx, "pwd\r")
	waitScreen(b, b.ctx, `^/tmp$`)

	before := evaluate[map[string]float64](b, `window.snapexecTerminal.size()`)
	b.do("resize the window", 10*time.Second, chromedp.EmulateViewport(700, 600))
	func() {
		c, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		if _, err := chromedp.Run(c, chromedp.Poll[bool](`window.snapexecTerminal.size().rows !== `+jsNumber(before["rows"]), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("the terminal did not follow the window: %v", err)
		}
	}()
	after := evaluate[map[string]float64](b, `window.snapexecTerminal.size()`)
	typeKeys(b, b.ctx, "stty size\r")
	waitScreen(b, b.ctx, `^`+jsNumber(after["rows"])+` `+jsNumber(after["cols"])+`$`)

	typeKeys(b, b.ctx, "sleep 100; echo after-$((1+1))\r")
	waitScreen(b, b.ctx, `# sleep 100; echo after`)
	// A Ctrl-C that comes before sleep has taken the foreground is the
	// shell's to handle: wait until it has.
	pid := processPid(t, s, evaluate[string](b, `document.querySelector('[data-testid="attach-id"]').value`))
	deadline := time.Now().Add(15 * time.Second)
	for !testserver.InForeground(pid, "sleep") {
		if time.Now().After(deadline) {
			t.Fatal("sleep never took the terminal's foreground")
		}
		time.Sleep(10 * time.Millisecond)
	}
	typeKeys(b, b.ctx, "c", chromedp.KeyModifiers(chromedp.ModifierCtrl))
	// The interrupt flushes what was typed ahead: type on at the next prompt.
	waitScreen(b, b.ctx, `^\^C\n#`)
	typeKeys(b, b.ctx, "echo back-$((1+1))\r")
	waitScreen(b, b.ctx, `^back-2$`)
	if screen := evaluate[string](b, `window.snapexecTerminal.text()`); regexp.MustCompile(`(?m)^after-2$`).MatchString(screen) {
		t.Errorf("Ctrl-C did not end sleep 100 alone:\n%s", screen)
	}

	id := evaluate[string](b, `document.querySelector('[data-testid="attach-id"]').value`)
	tab2, cancelTab2 := chromedp.NewContext(b.ctx)
	defer cancelTab2()
	c, cancelNav := context.WithTimeout(tab2, 15*time.Second)
	defer cancelNav()
	if err := chromedp.Do(c,
		// A tab of its own has a session storage of its own: the user gives
		// it the token too.
		chromedp.Navigate(s.URL+"/"),
		chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("snapexec.token", `+jsString(s.Token)+`)`),
		chromedp.Navigate(s.URL+"/ui/terminal.html#p="+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="term-status"][data-state="ok"]`)),
	); err != nil {
		t.Fatalf("second tab: %v", err)
	}
	b2 := &browser{t: t, ctx: tab2, rec: b.rec}
	waitScreen(b2, tab2, `^back-2$`) // the scrollback
	typeKeys(b2, tab2, "echo from-b-$((2*3))\r")
	waitScreen(b, b.ctx, `^from-b-6$`)
	waitScreen(b2, tab2, `^from-b-6$`)
	typeKeys(b, b.ctx, "echo from-a-$((3*3))\r")
	waitScreen(b2, tab2, `^from-a-9$`)

	// A dropped connection resumes after the last seq it saw: nothing is
	// lost, nothing shown twice.
	opened := evaluate[int](b, `window.snapexecTerminal.opened()`)
	b.do("drop the connection", 10*time.Second, chromedp.Evaluate[chromedp.Void](`window.snapexecTerminal.drop()`))
	func() {
		c, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		if _, err := chromedp.Run(c, chromedp.Poll[bool](`window.snapexecTerminal.opened() > `+strconv.Itoa(opened), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("no reconnect after a dropped connection: %v", err)
		}
	}()
	typeKeys(b2, tab2, "echo while-away\r")
	waitScreen(b, b.ctx, `^while-away$`)
	if screen := evaluate[string](b, `window.snapexecTerminal.text()`); len(regexp.MustCompile(`(?m)^hi$`).FindAllString(screen, -1)) != 1 {
		t.Errorf("after the reconnect the terminal shows the output before it again:\n%s", screen)
	}
	typeKeys(b, b.ctx, "exit\r")
	b.do("the exit", 10*time.Second, chromedp.WaitVisible(chromedp.CSS(`[data-testid="term-status"][data-state="ended"]`)))
	if status := evaluate[string](b, `document.querySelector('[data-testid="term-status"]').textContent`); !strings.HasSuffix(status, " ended: exited (exit 0)") {
		t.Errorf("after the shell's exit the status reads %q, want it to end %q", status, " ended: exited (exit 0)")
	}
	b.screenshot(artifactDir(t), "terminal.png")
	urls, _, _, _ := b.rec.snapshot()
	for _, u := range urls {
		if strings.Contains(u, s.Token) {
			t.Errorf("the token appeared in a URL: %s", u)
		}
	}
	b.checkSameOrigin(s.URL, "GET "+s.URL+"/ui/vendor/xterm.mjs")
	if strings.Contains(s.Log(), s.Token) {
		t.Errorf("the token appeared in the server's log")
	}
}

func jsNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// processPid is the pid of process id, asked of the server with its token.
func processPid(t *testing.T, s *testserver.Server, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/processes/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Pid int }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.Pid == 0 {
		t.Fatalf("GET /processes/%s = %d: %v", id, resp.StatusCode, err)
	}
	return p.Pid
}
