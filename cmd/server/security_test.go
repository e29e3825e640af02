package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const testToken = "tok-0123456789abcdef-secret"

// do sends a request with headers and returns the status and the body.
func (s *testServer) do(t *testing.T, method, path, body string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestTokenAuth(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	writeTestFile(t, file, testToken+"\n")
	s := startServer(t, nil, "--token-file", file)
	exec := `{"argv":["/usr/bin/env"],"env":{"VISIBLE":"env-value-42"},"envPolicy":{"includeOnly":["SNAPEXEC*","VISIBLE"]}}`
	tests := []struct {
		name, method, path, body, auth string
		want                           int
	}{
		{"no token", "POST", "/exec", exec, "", 401},
		{"wrong token", "POST", "/exec", exec, "Bearer nope", 401},
		{"token as basic", "POST", "/exec", exec, "Basic " + testToken, 401},
		{"token prefix", "POST", "/exec", exec, "Bearer " + testToken[:10], 401},
		{"right token", "POST", "/exec", exec, "Bearer " + testToken, 200},
		{"healthz is open", "GET", "/healthz", "", "", 200},
		{"readyz is open", "GET", "/readyz", "", "", 200},
		{"dashboard page is open", "GET", "/", "", "", 200},
		{"snapshots need it", "GET", "/snapshots", "", "", 401},
		{"metrics need it", "GET", "/metrics", "", "", 401},
		{"stats need it", "GET", "/stats", "", "", 401},
		{"contract needs it", "GET", "/openapi.yaml", "", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.auth != "" {
				h["Authorization"] = tt.auth
			}
			code, body, hdr := s.do(t, tt.method, tt.path, tt.body, h)
			if code != tt.want {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
			}
			if code == 401 && (!strings.Contains(body, `"code":"unauthorized"`) || hdr.Get("WWW-Authenticate") == "") {
				t.Errorf("401 = %s %v, want an unauthorized problem with WWW-Authenticate", body, hdr)
			}
			if strings.Contains(body, testToken) {
				t.Errorf("the token appears in a response body")
			}
			if tt.want == 200 && tt.path == "/exec" && (strings.Contains(body, "SNAPEXEC_TOKEN") || !strings.Contains(body, "VISIBLE=env-value-42")) {
				t.Errorf("child env = %s, want VISIBLE and no server token variable", body)
			}
		})
	}
	_, metrics, _ := s.do(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + testToken})
	for _, secret := range []string{testToken, "env-value-42"} {
		if strings.Contains(metrics, secret) {
			t.Errorf("/metrics contains %q", secret)
		}
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("the log contains %q", secret)
		}
	}
}

func TestTokenFromEnvironmentNeverReachesChild(t *testing.T) {
	s := startServer(t, map[string]string{"SNAPEXEC_TOKEN": testToken}) // the server's own environment
	code, body, _ := s.do(t, "POST", "/exec", `{"argv":["/usr/bin/env"],"envPolicy":{"ignoreDefaultExcludes":true}}`,
		map[string]string{"Authorization": "Bearer " + testToken})
	if code != 200 || strings.Contains(body, testToken) {
		t.Errorf("/exec with inherit all = %d, token visible: %v", code, strings.Contains(body, testToken))
	}
}

func TestHostAndOriginChecks(t *testing.T) {
	s := startServer(t, nil, "--allowed-hosts", "snapexec.internal")
	port := s.url[strings.LastIndex(s.url, ":"):]
	body := `{"argv":["true"]}`
	tests := []struct {
		name    string
		headers map[string]string
		want    int
		code    string
	}{
		{"loopback host", map[string]string{"Host": "127.0.0.1" + port}, 200, ""},
		{"localhost", map[string]string{"Host": "localhost" + port}, 200, ""},
		{"ipv6 loopback", map[string]string{"Host": "[::1]" + port}, 200, ""},
		{"configured name", map[string]string{"Host": "snapexec.internal" + port}, 200, ""},
		{"rebinding host", map[string]string{"Host": "evil.example" + port}, 421, "misdirected_host"},
		{"rebinding without port", map[string]string{"Host": "attacker.test"}, 421, "misdirected_host"},
		{"cross-origin", map[string]string{"Origin": "http://evil.example"}, 403, "forbidden_origin"},
		{"other port is another origin", map[string]string{"Origin": "http://127.0.0.1:1"}, 403, "forbidden_origin"},
		{"same origin", map[string]string{"Origin": s.url}, 200, ""},
		{"null origin", map[string]string{"Origin": "null"}, 403, "forbidden_origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got, _ := s.do(t, "POST", "/exec", body, tt.headers)
			if code != tt.want || (tt.code != "" && !strings.Contains(got, `"code":"`+tt.code+`"`)) {
				t.Errorf("POST /exec with %v = %d %s, want %d %s", tt.headers, code, got, tt.want, tt.code)
			}
		})
	}
	// curl users forget -H: a text/plain body is a 415 that says how.
	req, _ := http.NewRequest("POST", s.url+"/exec", strings.NewReader(body))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 415 || !strings.Contains(string(b), "Content-Type: application/json") {
		t.Errorf("text/plain body = %d %s, want 415 with a hint", resp.StatusCode, b)
	}
}

func TestLimits(t *testing.T) {
	s := startServer(t, nil,
		"--max-body-bytes", "4096", "--max-args", "4", "--max-arg-bytes", "64",
		"--max-env", "3", "--max-env-bytes", "64", "--max-stdin-bytes", "16", "--max-timeout", "10s",
		"--max-output-bytes", "1000")
	tests := []struct {
		name string
		body string
		want int
		code string
	}{
		{"body at the limit", `{"argv":["true"],"stdin":"` + strings.Repeat(" ", 0) + `"}` + strings.Repeat(" ", 4096-len(`{"argv":["true"],"stdin":""}`)), 200, ""},
		{"body above the limit", `{"argv":["true"]}` + strings.Repeat(" ", 4096), 413, "body_too_large"},
		{"argv count at the limit", `{"argv":["true","a","b","c"]}`, 200, ""},
		{"argv count above", `{"argv":["true","a","b","c","d"]}`, 400, "invalid_request"},
		{"argv bytes at the limit", `{"argv":["true","` + strings.Repeat("a", 64-5-1) + `"]}`, 200, ""},
		{"argv bytes above", `{"argv":["true","` + strings.Repeat("a", 64-5) + `"]}`, 400, "invalid_request"},
		{"env count at the limit", `{"argv":["true"],"env":{"A":"1","B":"2","C":"3"}}`, 200, ""},
		{"env count above", `{"argv":["true"],"env":{"A":"1","B":"2","C":"3","D":"4"}}`, 400, "invalid_request"},
		{"env bytes at the limit", `{"argv":["true"],"env":{"A":"` + strings.Repeat("v", 64-3) + `"}}`, 200, ""},
		{"env bytes above", `{"argv":["true"],"env":{"A":"` + strings.Repeat("v", 64-2) + `"}}`, 400, "invalid_request"},
		{"policy set above", `{"argv":["true"],"envPolicy":{"set":{"A":"1","B":"2","C":"3","D":"4"}}}`, 400, "invalid_request"},
		{"stdin at the limit", `{"argv":["true"],"stdin":"` + strings.Repeat("s", 16) + `"}`, 200, ""},
		{"stdin above", `{"argv":["true"],"stdin":"` + strings.Repeat("s", 17) + `"}`, 400, "invalid_request"},
		{"timeout at the max", `{"argv":["true"],"timeoutMs":10000}`, 200, ""},
		{"timeout above the max", `{"argv":["true"],"timeoutMs":10001}`, 400, "invalid_request"},
		{"idle timeout above the max", `{"argv":["true"],"idleTimeoutMs":10001}`, 400, "invalid_request"},
		{"maxOutputBytes at the max", `{"argv":["true"],"maxOutputBytes":1000}`, 200, ""},
		{"maxOutputBytes above", `{"argv":["true"],"maxOutputBytes":1001}`, 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got, _ := s.do(t, "POST", "/exec", tt.body, nil)
			if code != tt.want || (tt.code != "" && !strings.Contains(got, `"code":"`+tt.code+`"`)) {
				t.Errorf("POST /exec %.60s = %d %s, want %d %s", tt.body, code, got, tt.want, tt.code)
			}
		})
	}
}

func TestRefusesNonLoopbackWithoutToken(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseConfig([]string{"snapexec", "--addr", "0.0.0.0:8080"}, func(string) string { return "" }, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("parseConfig(--addr 0.0.0.0:8080) error = %v, want a refusal that says how to set a token", err)
	}
	if _, err := parseConfig([]string{"snapexec", "--addr", "0.0.0.0:8080"}, func(k string) string {
		if k == "SNAPEXEC_TOKEN" {
			return testToken
		}
		return ""
	}, &stderr); err != nil {
		t.Errorf("parseConfig(0.0.0.0 with SNAPEXEC_TOKEN) error = %v, want nil", err)
	}
	if _, err := parseConfig([]string{"snapexec", "--addr", "[::1]:8080"}, func(string) string { return "" }, &stderr); err != nil {
		t.Errorf("parseConfig([::1]) error = %v, want nil", err)
	}
	if _, err := parseConfig([]string{"snapexec"}, func(k string) string {
		if k == "SNAPEXEC_TOKEN" {
			return "short"
		}
		return ""
	}, &stderr); err == nil {
		t.Errorf("a 5-byte token was accepted")
	}
	file := filepath.Join(t.TempDir(), "missing")
	if _, err := parseConfig([]string{"snapexec", "--token-file", file}, func(string) string { return "" }, &stderr); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("a missing token file error = %v, want a --token-file error", err)
	}
}

func TestProcessLimits(t *testing.T) {
	s := startServer(t, nil, "--max-running", "2", "--max-retained", "2", "--retention", "1h")
	for i := range 2 { // at the limit
		s.startProcess(t, map[string]any{"processId": "run-" + strconv.Itoa(i), "argv": []string{"sleep", "30"}})
	}
	code, body, hdr := s.do(t, "POST", "/processes", `{"argv":["sleep","30"]}`, nil)
	if code != 429 || !strings.Contains(body, `"code":"too_many_processes"`) || hdr.Get("Retry-After") == "" {
		t.Errorf("third running process = %d %s Retry-After %q, want 429 too_many_processes with Retry-After", code, body, hdr.Get("Retry-After"))
	}
	if code, _, _ := s.do(t, "POST", "/exec", `{"argv":["true"]}`, nil); code != 429 {
		t.Errorf("/exec beyond --max-running = %d, want 429", code)
	}
	for i := range 2 {
		s.delete(t, "/processes/run-"+strconv.Itoa(i))
		s.waitStatus(t, "run-"+strconv.Itoa(i), "terminated")
	}
	// Three finished processes with --max-retained 2: the oldest is forgotten.
	for i := range 3 {
		id := "done-" + strconv.Itoa(i)
		s.startProcess(t, map[string]any{"processId": id, "argv": []string{"true"}})
		s.waitStatus(t, id, "exited")
	}
	if code, _ := s.get(t, "/processes/done-0"); code != 404 {
		t.Errorf("oldest of 3 finished with --max-retained 2 = %d, want 404 (forgotten)", code)
	}
	if code, _ := s.get(t, "/processes/done-2"); code != 200 {
		t.Errorf("newest finished process = %d, want 200", code)
	}
}

func TestRetainedOutputBound(t *testing.T) {
	s := startServer(t, nil, "--max-retained-output-bytes", "300000", "--retention", "1h")
	for i := range 3 { // 3 × 200 KB of output against a 300 KB bound
		id := "out-" + strconv.Itoa(i)
		s.startProcess(t, map[string]any{"processId": id, "argv": []string{"sh", "-c", "yes | head -c 200000"}})
		s.waitStatus(t, id, "exited")
	}
	if code, _ := s.get(t, "/processes/out-0"); code != 404 {
		t.Errorf("oldest output beyond --max-retained-output-bytes = %d, want 404", code)
	}
	if code, _ := s.get(t, "/processes/out-2"); code != 200 {
		t.Errorf("newest process = %d, want 200", code)
	}
}

// TestConcurrentCaptureLimit: with --max-captures 1 two scopes' captures
// never overlap. A command whose capture waits for the slot longer than the
// slot wait (500 ms) runs without the snapshot and says why (issue 14); its
// capture stays queued and runs after the other's.
func TestConcurrentCaptureLimit(t *testing.T) {
	s := startServer(t, nil, "--max-captures", "1")
	log := filepath.Join(t.TempDir(), "captures")
	var homes [2]string
	for i := range homes {
		homes[i] = t.TempDir()
		// Only the capture sources .bashrc: a fallback's plain login shell
		// does not log.
		writeTestFile(t, filepath.Join(homes[i], ".bashrc"), "echo start >> '"+log+"'; sleep 0.4; echo end >> '"+log+"'\n")
	}
	receipts := make(chan map[string]any, 2)
	for i, home := range homes {
		go func() {
			_, got, _ := s.post(t, "/exec", snapshotBody(home, "true", "cap-"+strconv.Itoa(i), "bash", "/bin/bash"))
			r, _ := got["snapshot"].(map[string]any)
			receipts <- r
		}()
	}
	for range homes {
		r := <-receipts
		reason, _ := r["reason"].(string)
		if r["outcome"] != "used" && (r["outcome"] != "fallback" || !strings.Contains(reason, "no shell snapshot capture slot")) {
			t.Errorf("receipt with --max-captures 1 = %v, want used, or fallback for want of a slot", r)
		}
	}
	waitFor(t, "both captures", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), "end") == 2
	})
	if b, _ := os.ReadFile(log); string(b) != "start\nend\nstart\nend\n" {
		t.Errorf("capture log with --max-captures 1 = %q, want one capture after the other", b)
	}
}
