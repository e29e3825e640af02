package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/snapexec/snapexec/internal/testserver"
)

// wsClient is one attachment to a process: what it has received so far.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	out  strings.Builder
	exit map[string]any
	seqs []int64 // the seq messages' seqs
	err  error   // the read that ended the connection
}

// attach dials the attach WebSocket of process id with opts.
func (s *testServer) attach(t *testing.T, id, query string, opts *websocket.DialOptions) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, strings.Replace(s.url, "http", "ws", 1)+"/processes/"+id+"/attach"+query, opts)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("attach %s%s: %v (%d)", id, query, err, code)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &wsClient{t: t, conn: conn}
}

// until reads messages until the output holds want, or the exit message
// came (then it reports whether want was seen).
func (c *wsClient) until(want string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !strings.Contains(c.out.String(), want) {
		if c.exit != nil || c.err != nil {
			c.t.Fatalf("attachment ended (exit %v, %v) without %q in %q", c.exit, c.err, want, c.out.String())
		}
		c.next(ctx)
	}
}

// next reads one message.
func (c *wsClient) next(ctx context.Context) {
	typ, data, err := c.conn.Read(ctx)
	switch {
	case err != nil:
		c.err = err
	case typ == websocket.MessageBinary:
		c.out.Write(data)
	default:
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			c.t.Fatalf("text message %q is not JSON", data)
		}
		switch m["type"] {
		case "exit":
			c.exit = m
		case "seq":
			seq, _ := m["seq"].(float64)
			c.seqs = append(c.seqs, int64(seq))
		}
	}
}

// end reads until the exit message and the close that follows it.
func (c *wsClient) end() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for c.err == nil {
		c.next(ctx)
	}
	if c.exit == nil || websocket.CloseStatus(c.err) != websocket.StatusNormalClosure {
		c.t.Fatalf("attachment ended with exit %v and %v, want an exit message and a normal close; output %q", c.exit, c.err, c.out.String())
	}
}

func (c *wsClient) send(data string) {
	c.t.Helper()
	if err := c.conn.Write(context.Background(), websocket.MessageBinary, []byte(data)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *wsClient) sendText(data string) {
	c.t.Helper()
	if err := c.conn.Write(context.Background(), websocket.MessageText, []byte(data)); err != nil {
		c.t.Fatal(err)
	}
}

// TestTerminalOverWebSockets: a shell on a terminal, two clients attached;
// both see what either types, a resize reaches stty, Ctrl-C ends the
// foreground job, a late client gets the scrollback, and the exit comes as
// a message and a normal close to both.
func TestTerminalOverWebSockets(t *testing.T) {
	s := startServer(t, nil)
	s.startProcess(t, map[string]any{"processId": "term-1", "argv": []string{"sh"}, "tty": map[string]int{"cols": 80, "rows": 24},
		"env": map[string]string{"PATH": os.Getenv("PATH"), "PS1": "$ "}})
	a := s.attach(t, "term-1", "", nil)
	a.until("$ ")
	a.send("echo hi\n")
	a.until("hi\r\n")

	b := s.attach(t, "term-1", "", &websocket.DialOptions{Subprotocols: []string{"snapexec.v1"}})
	b.until("echo hi\r\nhi\r\n") // the scrollback
	if got := b.conn.Subprotocol(); got != "snapexec.v1" {
		t.Errorf("subprotocol = %q, want snapexec.v1", got)
	}
	b.send("echo from-$((40+2))\n")
	a.until("from-42\r\n")
	b.until("from-42\r\n")

	// A resize out of TTYSize's range is ignored, the connection open.
	a.sendText(`{"type":"resize","cols":0,"rows":0}`)
	a.sendText(`{"type":"resize","cols":5000,"rows":31}`)
	a.send("stty size\n")
	b.until("24 80\r\n")
	a.sendText(`{"type":"resize","cols":101,"rows":31}`)
	if p := s.waitTTY(t, "term-1", 101); p["tty"].(map[string]any)["rows"] != 31.0 {
		t.Errorf("tty after resize = %v, want 101x31", p["tty"])
	}
	a.send("stty size\n")
	b.until("31 101\r\n")

	a.send("sleep 100; echo after-$((1+1))\n")
	b.until("sleep 100; echo after")
	// A Ctrl-C that comes before sleep has taken the foreground is the
	// shell's to handle: wait until it has.
	pid := int(s.process(t, "term-1")["pid"].(float64))
	waitFor(t, "sleep in the terminal's foreground", func() bool { return testserver.InForeground(pid, "sleep") })
	a.send("\x03")
	a.send("echo back\n")
	b.until("back\r\n")
	if strings.Contains(b.out.String(), "after-2") {
		t.Errorf("Ctrl-C did not end sleep 100 alone: the rest of its list ran: %q", b.out.String())
	}

	code, body := s.get(t, "/processes/term-1/output?afterSeq=0")
	if code != 200 || !strings.Contains(string(body), `"stream":"pty"`) {
		t.Errorf("GET output of a terminal = %d %s, want chunks of stream pty", code, body)
	}

	// Closing every attachment leaves the terminal running.
	for _, c := range []*wsClient{a, b} {
		_ = c.conn.Close(websocket.StatusNormalClosure, "")
	}
	if p := s.process(t, "term-1"); p["status"] != "running" {
		t.Fatalf("after every client closed, the terminal is %v, want running", p["status"])
	}
	a = s.attach(t, "term-1", "", nil)
	b = s.attach(t, "term-1", "", nil)
	b.until("back\r\n")
	a.send("exit 7\n")
	for _, c := range []*wsClient{a, b} {
		c.end()
		if c.exit["status"] != "exited" || c.exit["exitCode"] != 7.0 {
			t.Errorf("exit message = %v, want exited 7", c.exit)
		}
	}
}

// waitTTY waits until the process's terminal is cols wide.
func (s *testServer) waitTTY(t *testing.T, id string, cols float64) map[string]any {
	t.Helper()
	var p map[string]any
	waitFor(t, "the resize", func() bool {
		p = s.process(t, id)
		tty, _ := p["tty"].(map[string]any)
		return tty != nil && tty["cols"] == cols
	})
	return p
}

// TestAttachResumesBySeq: afterSeq resumes after that seq exactly; without
// it the output starts at the oldest retained; a process on pipes gives its
// output and takes stdin with pipeStdin.
func TestAttachResumesBySeq(t *testing.T) {
	s := startServer(t, nil)
	s.startProcess(t, map[string]any{"processId": "cat-1", "argv": []string{"cat"}, "pipeStdin": true})
	if code, got, _ := s.post(t, "/processes/cat-1/stdin", map[string]any{"data": "one\n"}); code != 200 {
		t.Fatalf("stdin = %d %v", code, got)
	}
	code, body := s.get(t, "/processes/cat-1/output?waitMs=10000")
	if code != 200 || !strings.Contains(string(body), `"seq":1`) {
		t.Fatalf("output = %d %s", code, body)
	}
	resumed := s.attach(t, "cat-1", "?afterSeq=1", nil)
	whole := s.attach(t, "cat-1", "", nil)
	whole.until("one\n")
	resumed.send("two\n")
	resumed.until("two\n")
	whole.until("one\ntwo\n")
	if got := resumed.out.String(); got != "two\n" {
		t.Errorf("attach after seq 1 got %q, want only what followed: %q", got, "two\n")
	}
	if code, _, _ := s.do(t, "GET", "/processes/cat-1/attach?afterSeq=99", "", map[string]string{
		"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
	}); code != http.StatusBadRequest {
		t.Errorf("attach after a seq never sent = %d, want 400", code)
	}
	if code, body, _ := s.do(t, "GET", "/processes/cat-1/attach", "", nil); code != http.StatusUpgradeRequired || !strings.Contains(body, `"code":"invalid_request"`) {
		t.Errorf("attach without an upgrade = %d %s, want a 426 problem", code, body)
	}
	if code, _, _ := s.do(t, "DELETE", "/processes/cat-1", "", nil); code != 200 {
		t.Fatalf("DELETE = %d", code)
	}
	whole.end()
	if whole.exit["status"] != "terminated" {
		t.Errorf("exit message = %v, want terminated", whole.exit)
	}
}

// TestAttachSeqs: seqs is a boolean as the contract declares it, in every
// spelling strconv.ParseBool reads: a seq message follows each batch of
// output when it is true, none when it is false or absent; another value
// is a 400 problem naming seqs, before the upgrade.
func TestAttachSeqs(t *testing.T) {
	s := startServer(t, nil)
	s.startProcess(t, map[string]any{"processId": "seqs-1", "argv": []string{"sh", "-c", "echo one"}})
	for _, tt := range []struct {
		query    string
		wantSeqs bool
	}{
		{"?seqs=true", true}, {"?seqs=1", true}, {"?seqs=t", true}, {"?seqs=TRUE", true},
		{"?seqs=false", false}, {"?seqs=0", false}, {"", false},
	} {
		c := s.attach(t, "seqs-1", tt.query, nil)
		c.end()
		if got := len(c.seqs) > 0; got != tt.wantSeqs || c.out.String() != "one\n" {
			t.Errorf("attach%s: output %q, seq messages %v; want %q, seq messages: %v", tt.query, c.out.String(), c.seqs, "one\n", tt.wantSeqs)
		}
		if tt.wantSeqs && len(c.seqs) > 0 && c.seqs[len(c.seqs)-1] != 1 {
			t.Errorf("attach%s: seq messages %v, want the last one 1", tt.query, c.seqs)
		}
	}
	upgrade := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, tt := range []struct{ query, field string }{
		{"?seqs=maybe", "seqs"}, {"?seqs=", "seqs"}, {"?afterSeq=x", "afterSeq"}, {"?afterSeq=-1", "afterSeq"},
	} {
		code, body, hdr := s.do(t, "GET", "/processes/seqs-1/attach"+tt.query, "", upgrade)
		var p map[string]any
		_ = json.Unmarshal([]byte(body), &p)
		if code != http.StatusBadRequest || hdr.Get("Content-Type") != "application/problem+json" || p["code"] != "invalid_request" || p["field"] != tt.field {
			t.Errorf("attach%s = %d %s %s, want a 400 problem with field %s", tt.query, code, hdr.Get("Content-Type"), body, tt.field)
		}
	}
}

// TestAttachExitMessage: the exit message carries exitCode and signal
// always, null when absent, as the /exec exit event and a Process do.
func TestAttachExitMessage(t *testing.T) {
	s := startServer(t, nil)
	for _, tt := range []struct {
		script string
		want   map[string]any
	}{
		{"exit 3", map[string]any{"type": "exit", "status": "exited", "exitCode": 3.0, "signal": nil}},
		{"kill -TERM $$", map[string]any{"type": "exit", "status": "signaled", "exitCode": nil, "signal": "SIGTERM"}},
	} {
		p := s.startProcess(t, map[string]any{"argv": []string{"sh", "-c", tt.script}})
		c := s.attach(t, p["processId"].(string), "", nil)
		c.end()
		if !reflect.DeepEqual(c.exit, tt.want) {
			t.Errorf("sh -c %q: exit message %v, want %v", tt.script, c.exit, tt.want)
		}
	}
}

// TestAttachSecurity: the upgrade needs the token, from Authorization or
// offered as a subprotocol, which is never echoed nor logged; a page on
// another origin is refused.
func TestAttachSecurity(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, file, testToken+"\n")
	s := startServer(t, nil, "--token-file", file)
	auth := http.Header{"Authorization": {"Bearer " + testToken}}
	b, _ := json.Marshal(map[string]any{"processId": "sleep-1", "argv": []string{"sleep", "60"}, "tty": map[string]int{"cols": 80, "rows": 24}})
	if code, body, _ := s.do(t, "POST", "/processes", string(b), map[string]string{"Authorization": "Bearer " + testToken}); code != 201 {
		t.Fatalf("POST /processes = %d %s", code, body)
	}
	url := strings.Replace(s.url, "http", "ws", 1) + "/processes/sleep-1/attach"
	tests := []struct {
		name      string
		opts      websocket.DialOptions
		want      int
		wantProto string
	}{
		{"no token", websocket.DialOptions{}, 401, ""},
		{"wrong token as a subprotocol", websocket.DialOptions{Subprotocols: []string{"snapexec.v1", "snapexec.bearer.bm9wZQ"}}, 401, ""},
		{"token as a subprotocol, not encoded", websocket.DialOptions{Subprotocols: []string{"snapexec.v1", "snapexec.bearer." + testToken}}, 401, ""},
		{"token in Authorization", websocket.DialOptions{HTTPHeader: auth}, 101, ""},
		{"token as a subprotocol", websocket.DialOptions{Subprotocols: []string{"snapexec.v1", "snapexec.bearer." + base64.RawURLEncoding.EncodeToString([]byte(testToken))}}, 101, "snapexec.v1"},
		{"another origin", websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}, "Origin": {"http://evil.example"}}}, 403, ""},
		{"another origin with the subprotocol", websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://localhost:1"}},
			Subprotocols: []string{"snapexec.v1", "snapexec.bearer." + base64.RawURLEncoding.EncodeToString([]byte(testToken))}}, 403, ""},
		{"its own origin", websocket.DialOptions{HTTPHeader: http.Header{"Origin": {s.url}},
			Subprotocols: []string{"snapexec.v1", "snapexec.bearer." + base64.RawURLEncoding.EncodeToString([]byte(testToken))}}, 101, "snapexec.v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, url, &tt.opts)
			if resp == nil {
				t.Fatalf("dial: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Errorf("upgrade = %d (%v), want %d", resp.StatusCode, err, tt.want)
			}
			if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != tt.wantProto {
				t.Errorf("answered subprotocol %q, want %q", got, tt.wantProto)
			}
			if conn != nil {
				_ = conn.Close(websocket.StatusNormalClosure, "")
			}
		})
	}
	// The subprotocol carries the token on the attach upgrade alone.
	enc := base64.RawURLEncoding.EncodeToString([]byte(testToken))
	if code, _, _ := s.do(t, "GET", "/processes", "", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade",
		"Sec-WebSocket-Protocol": "snapexec.v1, snapexec.bearer." + enc}); code != 401 {
		t.Errorf("GET /processes with the token as a subprotocol = %d, want 401", code)
	}
	if strings.Contains(s.logs.String(), testToken) {
		t.Error("the token is in the server's log")
	}
}

// TestExecOnATerminal: /exec with tty answers the terminal's output as
// stdout, stderr empty; a resize of a process without a terminal is 409.
func TestExecOnATerminal(t *testing.T) {
	s := startServer(t, nil)
	code, got, _ := s.post(t, "/exec", map[string]any{"argv": []string{"sh", "-c", "echo out; echo err >&2; test -t 0 && echo tty"},
		"tty": map[string]int{"cols": 80, "rows": 24}, "env": map[string]string{"PATH": os.Getenv("PATH")}})
	if code != 200 || got["stdout"] != "out\r\nerr\r\ntty\r\n" || got["stderr"] != "" {
		t.Errorf("/exec on a terminal = %d stdout %q stderr %q, want the terminal's output as stdout", code, got["stdout"], got["stderr"])
	}
	code, got, _ = s.post(t, "/exec", map[string]any{"argv": []string{"true"}, "tty": map[string]int{"cols": 1001, "rows": 24}})
	if code != 400 {
		t.Errorf("/exec with a terminal 1001 wide = %d %v, want 400", code, got)
	}
	s.startProcess(t, map[string]any{"processId": "plain", "argv": []string{"sleep", "60"}})
	code, got, _ = s.post(t, "/processes/plain/resize", map[string]int{"cols": 90, "rows": 20})
	if code != 409 || got["code"] != "not_a_tty" {
		t.Errorf("resize without a terminal = %d %v, want 409 not_a_tty", code, got)
	}
}

// TestLoginTerminalFromASnapshot: `bash -l` on a terminal with a snapshot
// scope opens with the profile's state, without sourcing the profile; a
// profile that cannot be captured gives a real login terminal.
func TestLoginTerminalFromASnapshot(t *testing.T) {
	s := startServer(t, nil)
	tests := []struct {
		name, profile, wantOutcome string
		wantProfileRan             bool
	}{
		{"replayed", "", "used", false},
		// A capture is an interactive login shell, but on no terminal.
		{"capture fails", "[[ -t 0 ]] || exit 3\n", "fallback", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			writeTestFile(t, filepath.Join(home, ".bash_profile"), tt.profile+`echo PROFILE-RAN
greet() { echo "hello $1"; }
export PS1='snap> '
`)
			id := "login-" + strconv.Itoa(i)
			p := s.startProcess(t, map[string]any{"processId": id, "argv": []string{"/bin/bash", "-l"}, "tty": map[string]int{"cols": 80, "rows": 24},
				"cwd": home, "env": map[string]string{"HOME": home, "PATH": os.Getenv("PATH"), "TERM": "dumb"},
				"shellSnapshot": map[string]any{"scopeId": "term-" + tt.name, "shell": map[string]string{"name": "bash", "path": "/bin/bash"}}})
			if got := p["snapshot"].(map[string]any)["outcome"]; got != tt.wantOutcome {
				t.Errorf("snapshot outcome = %v, want %s", got, tt.wantOutcome)
			}
			c := s.attach(t, id, "", nil)
			c.until("snap> ")
			c.send("greet you\n")
			c.until("hello you\r\n")
			if got := strings.Contains(c.out.String(), "PROFILE-RAN"); got != tt.wantProfileRan {
				t.Errorf("the profile ran: %t, want %t; terminal: %q", got, tt.wantProfileRan, c.out.String())
			}
			c.send("exit\n")
			c.end()
		})
	}
}

// TestAttachmentsCountAgainstMaxConnections: an attachment's WebSocket,
// which net/http hands over to the attach route, still counts against
// --max-connections while it is open, so that many attachments cannot
// take the server beyond its bound; a connection that comes at the cap while
// every connection is an attachment is closed, and the attachments' places
// are free again once they close.
func TestAttachmentsCountAgainstMaxConnections(t *testing.T) {
	s := startServer(t, nil, "--max-connections", "2")
	s.startProcess(t, map[string]any{"processId": "cat-1", "argv": []string{"cat"}, "tty": map[string]int{"cols": 80, "rows": 24}})
	// Each on a connection of its own (a pooled idle one may have been
	// shed), tried again when it came while the others were all busy and was
	// closed itself.
	attach := func() *wsClient {
		t.Helper()
		url := strings.Replace(s.url, "http", "ws", 1) + "/processes/cat-1/attach"
		for range 100 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{}}})
			cancel()
			if err == nil {
				t.Cleanup(func() { _ = conn.CloseNow() })
				return &wsClient{t: t, conn: conn}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no attachment in 100 tries")
		return nil
	}
	a, b := attach(), attach()
	a.send("ping\n")
	a.until("ping")
	b.until("ping")

	addr := strings.TrimPrefix(s.url, "http://")
	served := func() bool {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false // closed by the server
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	// Each probe that is served sheds an idle connection left from the
	// requests above; once none is left, the two attachments fill the cap.
	waitFor(t, "a connection closed at --max-connections 2 with two attachments open", func() bool { return !served() })
	a.send("pong\n")
	b.until("pong") // the attachments were not shed for it
	for _, c := range []*wsClient{a, b} {
		_ = c.conn.Close(websocket.StatusNormalClosure, "")
	}
	waitFor(t, "a connection served once the attachments closed", served)
}
