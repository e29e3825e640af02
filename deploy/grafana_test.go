package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/client"
	"github.com/snapexec/snapexec/internal/testserver"
)

// readDashboard decodes deploy/grafana/dashboards/snapexec.json.
func readDashboard(t *testing.T, root string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "dashboards", "snapexec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("snapexec.json: %v", err)
	}
	return dash
}

// dashboardPanels returns every panel, those inside rows too.
func dashboardPanels(dash map[string]any) []any {
	var out []any
	var walk func([]any)
	walk = func(panels []any) {
		for _, p := range panels {
			out = append(out, p)
			walk(digList(p, "panels"))
		}
	}
	walk(digList(dash, "panels"))
	return out
}

func dashboardDatasourceUIDs(t *testing.T, dash map[string]any) []string {
	t.Helper()
	var uids []string
	for _, p := range dashboardPanels(dash) {
		if uid := digString(p, "datasource", "uid"); uid != "" {
			uids = append(uids, uid)
		}
		for _, target := range digList(p, "targets") {
			if uid := digString(target, "datasource", "uid"); uid != "" {
				uids = append(uids, uid)
			}
		}
	}
	slices.Sort(uids)
	return slices.Compact(uids)
}

// A dashboard query: its PromQL and the labels it relies on.
type dashboardQuery struct {
	panel, expr string
	metrics     []string
	labels      []string // in by/without/on/ignoring, matchers and the legend
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	promVariable = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	legendLabel  = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	promKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan", "start", "end", "atan2"}
)

// parsePromQL returns the metric names and label names an expression uses:
// strings, durations and variables are dropped; identifiers followed by "("
// are functions or aggregations; the rest, minus keywords, are metrics.
func parsePromQL(expr string) (metrics, labels []string) {
	e := promString.ReplaceAllString(expr, `""`)
	e = promVariable.ReplaceAllString(e, " ")
	for _, m := range promMatchers.FindAllString(e, -1) {
		for _, l := range promMatcher.FindAllStringSubmatch(m, -1) {
			labels = append(labels, l[1])
		}
	}
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRange.ReplaceAllString(e, " ")
	for _, g := range promGrouping.FindAllStringSubmatch(e, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
	}
	e = promGrouping.ReplaceAllString(e, " ")
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		if loc[0] > 0 {
			if c := e[loc[0]-1]; c == '.' || c >= '0' && c <= '9' {
				continue // part of a number such as 1e3
			}
		}
		ident := e[loc[0]:loc[1]]
		if strings.HasPrefix(strings.TrimLeft(e[loc[1]:], " \t\n"), "(") || slices.Contains(promKeywords, strings.ToLower(ident)) {
			continue
		}
		metrics = append(metrics, ident)
	}
	return metrics, labels
}

func dashboardQueries(t *testing.T, dash map[string]any) []dashboardQuery {
	t.Helper()
	var out []dashboardQuery
	for _, p := range dashboardPanels(dash) {
		for _, target := range digList(p, "targets") {
			expr := digString(target, "expr")
			if expr == "" {
				continue
			}
			q := dashboardQuery{panel: digString(p, "title"), expr: expr}
			q.metrics, q.labels = parsePromQL(expr)
			for _, m := range legendLabel.FindAllStringSubmatch(digString(target, "legendFormat"), -1) {
				q.labels = append(q.labels, m[1])
			}
			if len(q.metrics) == 0 {
				t.Errorf("panel %q: no metric found in %q", q.panel, expr)
			}
			out = append(out, q)
		}
	}
	return out
}

func TestParsePromQL(t *testing.T) {
	metrics, labels := parsePromQL(`histogram_quantile(0.9, sum by (le, http_route) (rate(http_server_request_duration_seconds_bucket{job="snapexec", code=~"5.."}[$__rate_interval] offset 5m))) / on(x) group_left sum(up) > bool 1e3`)
	if want := []string{"http_server_request_duration_seconds_bucket", "up"}; !slices.Equal(metrics, want) {
		t.Errorf("metrics = %q, want %q", metrics, want)
	}
	if want := []string{"job", "code", "le", "http_route", "x"}; !slices.Equal(labels, want) {
		t.Errorf("labels = %q, want %q", labels, want)
	}
}

// exposition is a Prometheus text exposition: every label name seen on each
// metric name.
type exposition map[string]map[string]bool

var expoLabel = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"`)

func parseExposition(t *testing.T, body []byte) exposition {
	t.Helper()
	out := exposition{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end <= 0 {
			t.Fatalf("/metrics: unexpected line %q", line)
		}
		name := line[:end]
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		if line[end] == '{' {
			if close := strings.LastIndexByte(line, '}'); close > end {
				for _, m := range expoLabel.FindAllStringSubmatch(line[end:close+1], -1) {
					out[name][m[1]] = true
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// get sends a GET the way Prometheus and a probe do: with the bearer
// token and, when host is set, that Host header, which the Go client does
// not let a caller choose per request.
func get(t *testing.T, rawURL, host, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestGrafanaDashboardMetrics(t *testing.T) {
	project, root := loadCompose(t)
	queries := dashboardQueries(t, readDashboard(t, root))
	var names []string
	for _, q := range queries {
		names = append(names, q.metrics...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) < 8 {
		t.Fatalf("the dashboard uses only %d metrics (%q); the regexp or the dashboard is off", len(names), names)
	}

	// The server as compose runs it: the committed token, the allowed Host.
	snapexec := service(t, project, "snapexec")
	var tokenFile string
	for _, ref := range snapexec.Secrets {
		if secretTarget(ref) == serviceEnv(snapexec, "SNAPEXEC_TOKEN_FILE") {
			tokenFile = project.Secrets[ref.Source].File
		}
	}
	token := readToken(t, tokenFile)
	s := testserver.Start(t, testserver.Options{NoToken: true, Env: []string{
		"SNAPEXEC_TOKEN_FILE=" + tokenFile,
		"SNAPEXEC_ALLOWED_HOSTS=" + serviceEnv(snapexec, "SNAPEXEC_ALLOWED_HOSTS"),
	}})

	// A capture that succeeds, one whose profile fails (failure_reason), and a
	// command without a snapshot, through the Go client with the token.
	api, err := client.New(s.URL, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	good, bad := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, ".bashrc"), []byte("exit 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snapshot := func(home, scope string) client.ExecRequest {
		env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
		return client.ExecRequest{
			Argv: []string{"/bin/bash", "-lc", "true"}, Env: &env,
			ShellSnapshot: &client.ShellSnapshotRequest{ScopeId: scope, Shell: client.ShellInfo{Name: "bash", Path: "/bin/bash"}},
		}
	}
	for _, tc := range []struct {
		req         client.ExecRequest
		wantOutcome client.SnapshotReceiptOutcome
	}{
		{snapshot(good, "deploy"), client.SnapshotReceiptOutcomeUsed},
		{snapshot(bad, "deploy-failing"), client.SnapshotReceiptOutcomeFallback},
		{client.ExecRequest{Argv: []string{"true"}}, client.SnapshotReceiptOutcomeNotRequested},
	} {
		got, err := api.Exec(context.Background(), tc.req)
		if err != nil || got.Snapshot.Outcome != tc.wantOutcome {
			t.Fatalf("Exec(%q) = %+v, %v; want snapshot outcome %s", tc.req.Argv, got, err, tc.wantOutcome)
		}
	}

	// Scraped as Prometheus does: Host snapexec:<port>, the bearer token.
	host := "snapexec:8080"
	if code, _ := get(t, s.URL+"/metrics", host, ""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d, want 401", code)
	}
	code, body := get(t, s.URL+"/metrics", host, token)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics as Prometheus = %d %s", code, body)
	}
	if bytes.Contains(body, []byte(token)) {
		t.Errorf("/metrics contains the token")
	}
	expo := parseExposition(t, body)
	for _, name := range names {
		if expo[name] == nil {
			t.Errorf("the dashboard uses %s, which /metrics does not expose", name)
		}
	}
	// Labels the queries group, filter or name series by. job and instance
	// are added by Prometheus at scrape time.
	for _, q := range queries {
		for _, l := range q.labels {
			if l == "job" || l == "instance" {
				continue
			}
			if !slices.ContainsFunc(q.metrics, func(m string) bool { return expo[m][l] }) {
				t.Errorf("panel %q: label %s is on none of %q in /metrics", q.panel, l, q.metrics)
			}
		}
	}
	// Every time is in seconds (the metrics' unit suffix), so a panel that
	// shows one says s.
	for _, p := range dashboardPanels(readDashboard(t, root)) {
		for _, target := range digList(p, "targets") {
			expr := digString(target, "expr")
			if strings.Contains(expr, "_seconds_bucket") && strings.Contains(expr, "histogram_quantile") {
				if unit := digString(p, "fieldConfig", "defaults", "unit"); unit != "s" {
					t.Errorf("panel %q shows %s in unit %q, want s", digString(p, "title"), expr, unit)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
