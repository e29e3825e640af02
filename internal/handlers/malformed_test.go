package handlers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/internal/files"
)

// TestMalformedRequests sends requests a careless or hostile client might,
// and checks each gets its documented 4xx problem and runs nothing (moved
// from cmd/server: the contract validator, the JSON decoder and the
// service's Validate, which the fake runs as the service does, answer all
// of them). Of the rows that needed the real server, the refused snapshot
// requests are the service's TestExecShellSnapshotProblems (and their
// mapping TestExecAnswers), and a missing program, a program that is a
// directory and a missing cwd exec's TestStartErrors (mapped in
// TestProblemResponses, and end to end in cmd/server's TestRunProblems).
func TestMalformedRequests(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		want                    int
		code                    string
	}{
		{"empty body", "", "", 400, "invalid_request"},
		{"open brace", "", `{`, 400, "invalid_request"},
		{"close brace", "", `}`, 400, "invalid_request"},
		{"array", "", `[]`, 400, "invalid_request"},
		{"null", "", `null`, 400, "invalid_request"},
		{"string", "", `"echo hi"`, 400, "invalid_request"},
		{"number", "", `123`, 400, "invalid_request"},
		{"trailing garbage", "", `{"argv":["true"]} x`, 400, "invalid_request"},
		// A name twice is two readings of one request: a proxy that checks
		// the first and a server that runs the last disagree.
		{"duplicate name", "", `{"argv":["true"],"argv":["false"]}`, 400, "invalid_request"},
		{"duplicate name, escaped", "", `{"argv":["true"],"\u0061rgv":["false"]}`, 400, "invalid_request"},
		{"duplicate env name", "", `{"argv":["true"],"env":{"A":"1","A":"2"}}`, 400, "invalid_request"},
		{"duplicate name in a nested object", "", `{"argv":["true"],"sandbox":{"writableRoots":["/tmp"],"writableRoots":["/"]}}`, 400, "invalid_request"},
		{"half a surrogate pair", "", `{"argv":["echo","\ud800"]}`, 400, "invalid_request"},
		{"nested past the depth bound", "", `{"argv":["true"],"env":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, 400, "invalid_request"},
		{"argv null", "", `{"argv":null}`, 400, "invalid_request"},
		{"argv element null", "", `{"argv":[null]}`, 400, "invalid_request"},
		{"empty argv", "", `{"argv":[]}`, 400, "invalid_request"},
		{"empty program", "", `{"argv":[""]}`, 400, "invalid_request"},
		{"argv string", "", `{"argv":"ls"}`, 400, "invalid_request"},
		{"argv number", "", `{"argv":[1]}`, 400, "invalid_request"},
		{"argv bool", "", `{"argv":[true]}`, 400, "invalid_request"},
		{"argv object", "", `{"argv":[{}]}`, 400, "invalid_request"},
		{"missing argv", "", `{"cwd":"/"}`, 400, "invalid_request"},
		{"unknown field", "", `{"argv":["true"],"shell":true}`, 400, "invalid_request"},
		{"relative cwd", "", `{"argv":["true"],"cwd":"tmp"}`, 400, "invalid_request"},
		{"empty cwd", "", `{"argv":["true"],"cwd":""}`, 400, "invalid_request"},
		{"cwd number", "", `{"argv":["true"],"cwd":1}`, 400, "invalid_request"},
		{"env array", "", `{"argv":["true"],"env":["A=1"]}`, 400, "invalid_request"},
		{"env number value", "", `{"argv":["true"],"env":{"A":1}}`, 400, "invalid_request"},
		{"env null value", "", `{"argv":["true"],"env":{"A":null}}`, 400, "invalid_request"},
		{"env name with =", "", `{"argv":["true"],"env":{"A=B":"1"}}`, 400, "invalid_request"},
		{"env name with NUL", "", `{"argv":["true"],"env":{"A\u0000B":"1"}}`, 400, "invalid_request"},
		{"env value with NUL", "", `{"argv":["true"],"env":{"A":"1\u00002"}}`, 400, "invalid_request"},
		{"env empty name", "", `{"argv":["true"],"env":{"":"1"}}`, 400, "invalid_request"},
		{"timeout string", "", `{"argv":["true"],"timeoutMs":"5"}`, 400, "invalid_request"},
		{"timeout negative", "", `{"argv":["true"],"timeoutMs":-1}`, 400, "invalid_request"},
		{"timeout zero", "", `{"argv":["true"],"timeoutMs":0}`, 400, "invalid_request"},
		{"timeout huge", "", `{"argv":["true"],"timeoutMs":1e30}`, 400, "invalid_request"},
		{"timeout past int64", "", `{"argv":["true"],"timeoutMs":9223372036854775808}`, 400, "invalid_request"},
		{"timeout above max", "", `{"argv":["true"],"timeoutMs":60001}`, 400, "invalid_request"},
		{"timeout fraction", "", `{"argv":["true"],"timeoutMs":1.5}`, 400, "invalid_request"},
		{"idle timeout negative", "", `{"argv":["true"],"idleTimeoutMs":-5}`, 400, "invalid_request"},
		{"max output negative", "", `{"argv":["true"],"maxOutputBytes":-1}`, 400, "invalid_request"},
		{"max output absurd", "", `{"argv":["true"],"maxOutputBytes":1000000000000}`, 400, "invalid_request"},
		{"stdin number", "", `{"argv":["true"],"stdin":5}`, 400, "invalid_request"},
		{"policy inherit unknown", "", `{"argv":["true"],"envPolicy":{"inherit":"sometimes"}}`, 400, "invalid_request"},
		{"policy string", "", `{"argv":["true"],"envPolicy":"all"}`, 400, "invalid_request"},
		{"policy exclude number", "", `{"argv":["true"],"envPolicy":{"exclude":[1]}}`, 400, "invalid_request"},
		{"policy set name with =", "", `{"argv":["true"],"envPolicy":{"set":{"A=B":"x"}}}`, 400, "invalid_request"},
		{"policy unknown field", "", `{"argv":["true"],"envPolicy":{"inherits":"all"}}`, 400, "invalid_request"},
		{"snapshot without shell", "", `{"argv":["true"],"shellSnapshot":{"scopeId":"s"}}`, 400, "invalid_request"},
		{"snapshot shell name number", "", `{"argv":["true"],"shellSnapshot":{"scopeId":"s","shell":{"name":5,"path":"/bin/bash"}}}`, 400, "invalid_request"},
		{"NUL in argv", "", `{"argv":["echo","a\u0000b"]}`, 400, "invalid_request"},
		{"NUL in cwd", "", `{"argv":["true"],"cwd":"/tmp\u0000x"}`, 400, "invalid_request"},
		{"invalid UTF-8 in argv", "", "{\"argv\":[\"echo\",\"\xff\xfe\"]}", 400, "invalid_request"},
		{"invalid UTF-8 in env name", "", "{\"argv\":[\"true\"],\"env\":{\"\xc3\":\"1\"}}", 400, "invalid_request"},
		{"text/plain", "text/plain", `{"argv":["true"]}`, 415, "unsupported_media_type"},
		{"form", "application/x-www-form-urlencoded", `argv=true`, 415, "unsupported_media_type"},
		// JSON is UTF-8 (RFC 8259, 8.1): a body said to be in another
		// charset would be read as what it is not.
		{"charset utf-16", "application/json; charset=utf-16", `{"argv":["true"]}`, 415, "unsupported_media_type"},
		{"charset latin-1", "application/json;charset=ISO-8859-1", `{"argv":["true"]}`, 415, "unsupported_media_type"},
	}
	f := okExecutor()
	h := newTestRouter(t, f, io.Discard)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := localRequest("POST", "/exec", strings.NewReader(tt.body))
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), `"code":"`+tt.code+`"`) {
				t.Errorf("POST /exec %q = %d %s, want %d %s", tt.body, rec.Code, rec.Body, tt.want, tt.code)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/problem+json" {
				t.Errorf("POST /exec %q Content-Type = %q, want application/problem+json", tt.body, got)
			}
		})
	}
	if len(tests) < 40 {
		t.Errorf("only %d malformed requests", len(tests))
	}
	// Whitespace around the one value is JSON (a file sent with curl
	// --data-binary @file ends in a newline).
	req := localRequest("POST", "/exec", strings.NewReader(" \t{\"argv\":[\"echo\",\"still serving\"]}\r\n\n"))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	if h.ServeHTTP(rec, req); rec.Code != http.StatusOK {
		t.Errorf("after the malformed requests, /exec with whitespace around its body = %d %s", rec.Code, rec.Body)
	}
	// A charset of utf-8, however spelled, is JSON's own.
	for _, ct := range []string{"application/json; charset=utf-8", `application/json; charset="UTF-8"`} {
		req := localRequest("POST", "/exec", strings.NewReader(`{"argv":["true"]}`))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		if h.ServeHTTP(rec, req); rec.Code != http.StatusOK {
			t.Errorf("/exec with Content-Type %s = %d %s, want 200", ct, rec.Code, rec.Body)
		}
	}
	// A number beyond float64 is said to be out of range, not in the
	// validator's own words about its types.
	req = localRequest("POST", "/exec", strings.NewReader(`{"argv":["true"],"timeoutMs":1e400}`))
	req.Header.Set("Content-Type", "application/json")
	rec = httptest.NewRecorder()
	if h.ServeHTTP(rec, req); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"detail":"the number is out of range"`) || !strings.Contains(rec.Body.String(), `"field":"timeoutMs"`) {
		t.Errorf("timeoutMs 1e400 = %d %s, want 400 for timeoutMs saying the number is out of range", rec.Code, rec.Body)
	}
}

// TestJSONBodyCutShort: a JSON body whose client half-closes before its
// declared end (a Content-Length not reached, a chunked body without its last
// chunk) is 400 on the field body saying so, as an upload's is, and runs
// nothing: not "does not match the contract", which sends a client looking
// for a mistake in a request it sent right.
func TestJSONBodyCutShort(t *testing.T) {
	f := &fakeService{}
	srv := serveRouter(t, newTestRouter(t, f, io.Discard), nil)
	body := `{"argv":["true"]}`
	tests := []struct{ name, header, body string }{
		{"Content-Length not reached", "Content-Length: 100", body},
		{"Content-Length not reached inside a value", "Content-Length: 100", body[:9]},
		{"chunked, no last chunk", "Transfer-Encoding: chunked", fmt.Sprintf("%x\r\n%s\r\n", len(body), body)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := rawRequest(t, srv, "POST /exec HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"+tt.header+"\n", tt.body)
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			resp, answer := readAnswer(t, c, br)
			var p Problem
			_ = json.Unmarshal([]byte(answer), &p)
			if resp.StatusCode != http.StatusBadRequest || p.Code != InvalidRequest || deref(p.Field) != "body" ||
				!strings.Contains(deref(p.Detail), "ended before its declared end") {
				t.Errorf("answer %d %s, want 400 invalid_request for the field body, saying it ended before its declared end", resp.StatusCode, answer)
			}
		})
	}
	if calls := f.called(); len(calls) != 0 {
		t.Errorf("service calls %v, want none", calls)
	}
}

// TestEncodedBodies: a body with a content coding (Content-Encoding: gzip) is
// 415 on Content-Encoding before it is read, and nothing is run or written:
// the server decodes none, so an upload's compressed bytes would otherwise
// become the file, and a compressed command would be read as what it is
// not. identity is no coding. A Content-Type given twice is two readings of
// one body, and 400.
func TestEncodedBodies(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"argv":["true"]}`))
	_ = zw.Close()
	var written []string
	fs := &fakeFiles{WriteFn: func(p string, r io.Reader, _ files.WriteOptions) (files.Info, error) {
		b, _ := io.ReadAll(r)
		written = append(written, fmt.Sprintf("%s %q", p, b))
		return fileInfoFixture, nil
	}}
	f := okExecutor()
	execs := newTestRouter(t, f, io.Discard)
	uploads := filesRouter(t, fs)
	tests := []struct {
		name, method, target, body string
		h                          http.Handler
		header                     http.Header
		status                     int
		field                      string
	}{
		{"gzip command", "POST", "/exec", gz.String(), execs, http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}, 415, "Content-Encoding"},
		{"gzip upload", "PUT", "/files/content?path=/r/f", gz.String(), uploads, http.Header{"Content-Encoding": {"gzip"}}, 415, "Content-Encoding"},
		{"two codings", "PUT", "/files/content?path=/r/f", "x", uploads, http.Header{"Content-Encoding": {"identity", "br"}}, 415, "Content-Encoding"},
		{"Content-Type twice", "POST", "/exec", `{"argv":["true"]}`, execs, http.Header{"Content-Type": {"application/json", "text/plain"}}, 400, "Content-Type"},
		{"identity command", "POST", "/exec", `{"argv":["true"]}`, execs, http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"identity"}}, 200, ""},
		{"identity upload", "PUT", "/files/content?path=/r/f", "abc", uploads, http.Header{"Content-Encoding": {"Identity"}}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := localRequest(tt.method, tt.target, strings.NewReader(tt.body))
			for k, v := range tt.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.target, rec.Code, rec.Body, tt.status)
			}
			if tt.field != "" {
				if p := decodeProblem(t, rec); deref(p.Field) != tt.field {
					t.Errorf("field = %q, want %q", deref(p.Field), tt.field)
				}
			}
		})
	}
	if want := []string{`/r/f "abc"`}; strings.Join(written, "\n") != strings.Join(want, "\n") {
		t.Errorf("written %q, want %q: the encoded uploads refused", written, want)
	}
	if calls := f.called(); len(calls) != 1 {
		t.Errorf("service calls %v, want the identity command's alone", calls)
	}
}
