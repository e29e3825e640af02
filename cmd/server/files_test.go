package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// filesServer is a server whose files API serves root, with a secret
// beside it that no request may reach.
type filesServer struct {
	*testServer
	root, outside, secret string
}

func startFilesServer(t *testing.T, args ...string) filesServer {
	t.Helper()
	base := t.TempDir()
	fs := filesServer{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	fs.secret = filepath.Join(fs.outside, "secret")
	for _, d := range []string{fs.root, fs.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(fs.secret, []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs.testServer = startServer(t, nil, append([]string{"--files-root", fs.root}, args...)...)
	return fs
}

// in is a path beneath the root.
func (fs filesServer) in(rel string) string { return filepath.Join(fs.root, rel) }

// call sends a request with a raw (already encoded) query and answers its
// status, body and header.
func (fs filesServer) call(t *testing.T, method, route, rawQuery string, body io.Reader, header map[string]string) (int, []byte, http.Header) {
	t.Helper()
	target := fs.url + route
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, route, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// path is a query naming p, encoded as a client would.
func path(p string) string { return "path=" + url.QueryEscape(p) }

// jsonOf decodes b into a map, or fails.
func jsonOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %q", b)
	}
	return m
}

// TestFilesRoutes: every route of the files API, over HTTP.
func TestFilesRoutes(t *testing.T) {
	fs := startFilesServer(t)

	// Write, then read whole and in ranges.
	content := "0123456789abcdefghij"
	code, b, hdr := fs.call(t, "PUT", "/files/content", path(fs.in("a.txt")), strings.NewReader(content), nil)
	if code != 200 {
		t.Fatalf("PUT a.txt = %d %s", code, b)
	}
	written := jsonOf(t, b)
	if written["size"] != float64(len(content)) || written["type"] != "file" || hdr.Get("ETag") != `"`+written["etag"].(string)+`"` {
		t.Errorf("PUT answer = %v, ETag %q; want size %d, type file, the etag quoted in the header", written, hdr.Get("ETag"), len(content))
	}
	if code, b, hdr = fs.call(t, "GET", "/files/content", path(fs.in("a.txt")), nil, nil); code != 200 || string(b) != content || hdr.Get("ETag") == "" {
		t.Errorf("GET a.txt = %d %q (ETag %q), want 200 %q with an ETag", code, b, hdr.Get("ETag"), content)
	}
	ranges := []struct{ rng, want string }{{"bytes=0-3", "0123"}, {"bytes=10-", "abcdefghij"}, {"bytes=-5", "fghij"}, {"bytes=5-5", "5"}}
	for _, r := range ranges {
		code, b, hdr := fs.call(t, "GET", "/files/content", path(fs.in("a.txt")), nil, map[string]string{"Range": r.rng})
		if code != 206 || string(b) != r.want || !strings.HasPrefix(hdr.Get("Content-Range"), "bytes ") {
			t.Errorf("GET Range %s = %d %q (%s), want 206 %q", r.rng, code, b, hdr.Get("Content-Range"), r.want)
		}
	}
	if code, b, _ := fs.call(t, "GET", "/files/content", path(fs.in("a.txt")), nil, map[string]string{"Range": "bytes=0-1,4-5"}); code != 206 || !bytes.Contains(b, []byte("01")) || !bytes.Contains(b, []byte("45")) {
		t.Errorf("GET two ranges = %d %q, want 206 multipart with both", code, b)
	}
	if code, b, _ := fs.call(t, "GET", "/files/content", path(fs.in("a.txt")), nil, map[string]string{"Range": "bytes=100-"}); code != 416 || jsonOf(t, b)["code"] != "range_not_satisfiable" {
		t.Errorf("GET Range beyond the file = %d %s, want 416 range_not_satisfiable", code, b)
	}
	etag := `"` + written["etag"].(string) + `"`
	if code, _, _ := fs.call(t, "GET", "/files/content", path(fs.in("a.txt")), nil, map[string]string{"If-None-Match": etag}); code != 304 {
		t.Errorf("GET If-None-Match the current ETag = %d, want 304", code)
	}

	// Stat, mkdir -p, list and walk, paged.
	code, b, hdr = fs.call(t, "GET", "/files/stat", path(fs.in("a.txt")), nil, nil)
	if st := jsonOf(t, b); code != 200 || st["etag"] != written["etag"] || hdr.Get("ETag") != etag {
		t.Errorf("stat = %d %v (ETag %q), want the written etag", code, st, hdr.Get("ETag"))
	}
	for _, d := range []string{"d/e/f", "d/e/f"} { // twice: mkdir -p of an existing directory is fine
		if code, b, _ := fs.call(t, "POST", "/files/mkdir", "", strings.NewReader(fmt.Sprintf(`{"path":%q}`, fs.in(d))), map[string]string{"Content-Type": "application/json"}); code != 204 {
			t.Errorf("mkdir %s = %d %s, want 204", d, code, b)
		}
	}
	for _, n := range []string{"d/x", "d/y", "d/e/z"} {
		if code, b, _ := fs.call(t, "PUT", "/files/content", path(fs.in(n)), strings.NewReader(n), nil); code != 200 {
			t.Fatalf("PUT %s = %d %s", n, code, b)
		}
	}
	var names []string
	for cursor := ""; ; {
		q := path(fs.in("d")) + "&limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		code, b, _ := fs.call(t, "GET", "/files/list", q, nil, nil)
		if code != 200 {
			t.Fatalf("list = %d %s", code, b)
		}
		var page struct {
			Entries []struct{ Name string }
			Next    string
		}
		_ = json.Unmarshal(b, &page)
		for _, e := range page.Entries {
			names = append(names, e.Name)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if got := strings.Join(names, " "); got != "e x y" {
		t.Errorf("list of d in pages of 2 = %q, want e x y", got)
	}
	code, b, _ = fs.call(t, "GET", "/files/walk", path(fs.in("d"))+"&maxDepth=2", nil, nil)
	var walk struct{ Entries []struct{ Name, Type string } }
	_ = json.Unmarshal(b, &walk)
	var walked []string
	for _, e := range walk.Entries {
		walked = append(walked, e.Name)
	}
	if got := strings.Join(walked, " "); code != 200 || got != "e e/f e/z x y" {
		t.Errorf("walk of d to depth 2 = %d %q, want e e/f e/z x y", code, got)
	}

	// Copy, move, remove.
	post := func(route, body string) (int, map[string]any) {
		code, b, _ := fs.call(t, "POST", route, "", strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
		if len(b) == 0 {
			return code, nil
		}
		return code, jsonOf(t, b)
	}
	if code, got := post("/files/copy", fmt.Sprintf(`{"from":%q,"to":%q}`, fs.in("a.txt"), fs.in("b.txt"))); code != 200 || got["size"] != float64(len(content)) {
		t.Errorf("copy = %d %v", code, got)
	}
	if code, got := post("/files/copy", fmt.Sprintf(`{"from":%q,"to":%q}`, fs.in("a.txt"), fs.in("b.txt"))); code != 409 || got["code"] != "exists" {
		t.Errorf("copy onto an existing file without overwrite = %d %v, want 409 exists", code, got)
	}
	if code, got := post("/files/move", fmt.Sprintf(`{"from":%q,"to":%q}`, fs.in("b.txt"), fs.in("d/b.txt"))); code != 204 {
		t.Errorf("move = %d %v", code, got)
	}
	if b, err := os.ReadFile(fs.in("d/b.txt")); err != nil || string(b) != content {
		t.Errorf("moved file = %q, %v", b, err)
	}
	if code, got := post("/files/remove", fmt.Sprintf(`{"path":%q}`, fs.in("d"))); code != 409 || got["code"] != "not_empty" {
		t.Errorf("remove of a full directory without recursive = %d %v, want 409 not_empty", code, got)
	}
	if code, got := post("/files/remove", fmt.Sprintf(`{"path":%q,"recursive":true}`, fs.in("d"))); code != 204 {
		t.Errorf("remove recursive = %d %v", code, got)
	}
	if _, err := os.Stat(fs.in("d")); !os.IsNotExist(err) {
		t.Errorf("d after remove: %v", err)
	}
	if code, got := post("/files/remove", fmt.Sprintf(`{"path":%q,"recursive":true}`, fs.root)); code != 409 || got["code"] != "is_root" {
		t.Errorf("remove of the root = %d %v, want 409 is_root", code, got)
	}

	// The error codes.
	errs := []struct {
		method, route, query string
		want                 int
		code                 string
	}{
		{"GET", "/files/content", path(fs.in("missing")), 404, "not_found"},
		{"GET", "/files/content", path(fs.root), 409, "is_a_directory"},
		{"GET", "/files/stat", path("relative/path"), 400, "invalid_request"},
		{"GET", "/files/list", path(fs.in("a.txt")), 409, "not_a_directory"},
		{"GET", "/files/stat", path(fs.secret), 403, "outside_root"},
		{"GET", "/files/content", "", 400, "invalid_request"},
	}
	for _, e := range errs {
		code, b, hdr := fs.call(t, e.method, e.route, e.query, nil, nil)
		if code != e.want || hdr.Get("Content-Type") != "application/problem+json" || jsonOf(t, b)["code"] != e.code {
			t.Errorf("%s %s?%s = %d %s, want %d %s as a problem", e.method, e.route, e.query, code, b, e.want, e.code)
		}
	}
}

// TestFilesPreconditions: If-Match with the ETag from stat replaces only the
// version it names; If-None-Match: * only creates.
func TestFilesPreconditions(t *testing.T) {
	fs := startFilesServer(t)
	p := path(fs.in("f"))
	if code, _, _ := fs.call(t, "PUT", "/files/content", p, strings.NewReader("one"), map[string]string{"If-None-Match": "*"}); code != 200 {
		t.Fatalf("create with If-None-Match * = %d", code)
	}
	if code, b, _ := fs.call(t, "PUT", "/files/content", p, strings.NewReader("two"), map[string]string{"If-None-Match": "*"}); code != 412 || jsonOf(t, b)["code"] != "precondition_failed" {
		t.Errorf("replace with If-None-Match * = %d %s, want 412 precondition_failed", code, b)
	}
	_, _, hdr := fs.call(t, "GET", "/files/stat", p, nil, nil)
	etag := hdr.Get("ETag")
	// Another writer changes the file after the client's stat.
	if err := os.WriteFile(fs.in("f"), []byte("changed elsewhere"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, b, _ := fs.call(t, "PUT", "/files/content", p, strings.NewReader("mine"), map[string]string{"If-Match": etag}); code != 412 || jsonOf(t, b)["code"] != "precondition_failed" {
		t.Errorf("PUT If-Match a stale ETag = %d %s, want 412 precondition_failed", code, b)
	}
	if b, _ := os.ReadFile(fs.in("f")); string(b) != "changed elsewhere" {
		t.Errorf("a refused conditional write changed the file to %q", b)
	}
	_, _, hdr = fs.call(t, "GET", "/files/stat", p, nil, nil)
	if code, b, _ := fs.call(t, "PUT", "/files/content", p, strings.NewReader("mine"), map[string]string{"If-Match": hdr.Get("ETag")}); code != 200 {
		t.Errorf("PUT If-Match the current ETag = %d %s, want 200", code, b)
	}
	if code, b, _ := fs.call(t, "GET", "/files/content", p, nil, map[string]string{"If-Match": etag}); code != 412 || jsonOf(t, b)["code"] != "precondition_failed" {
		t.Errorf("GET If-Match a stale ETag = %d %s, want 412 precondition_failed", code, b)
	}
}

// TestFilesAtomicReplace: readers running through 100 replacements of a
// file by PUT only ever read one whole version.
func TestFilesAtomicReplace(t *testing.T) {
	fs := startFilesServer(t)
	const size = 256 << 10
	versions := [][]byte{bytes.Repeat([]byte("A"), size), bytes.Repeat([]byte("B"), size+1)}
	p := path(fs.in("f"))
	if code, _, _ := fs.call(t, "PUT", "/files/content", p, bytes.NewReader(versions[0]), nil); code != 200 {
		t.Fatal("first PUT failed")
	}
	var stop atomic.Bool
	var torn atomic.Int64
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				code, b, _ := fs.call(t, "GET", "/files/content", p, nil, nil)
				reads.Add(1)
				if code != 200 || (!bytes.Equal(b, versions[0]) && !bytes.Equal(b, versions[1])) {
					torn.Add(1)
				}
			}
		})
	}
	for i := range 100 {
		if code, b, _ := fs.call(t, "PUT", "/files/content", p, bytes.NewReader(versions[i%2]), nil); code != 200 {
			t.Errorf("PUT %d = %d %s", i, code, b)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := torn.Load(); n > 0 {
		t.Errorf("%d of %d reads saw neither version whole", n, reads.Load())
	}
	entries, _ := os.ReadDir(fs.root)
	if len(entries) != 1 {
		t.Errorf("the root holds %d entries after the writes, want the file alone (no temporary file left)", len(entries))
	}
}

// TestFilesEscapesOverHTTP: every way out of the root we know, sent as a
// client would (encoded or not), is refused through every route it can
// reach, and the secret beside the root is never read, written or removed.
func TestFilesEscapesOverHTTP(t *testing.T) {
	fs := startFilesServer(t)
	out := filepath.Base(fs.outside)
	links := map[string]string{
		"abs-out":  fs.secret,
		"rel-out":  "../" + out + "/secret",
		"abs-dir":  fs.outside,
		"rel-dir":  "../" + out,
		"chain":    "rel-out",
		"proc":     "/proc/self/root",
		"proc-rel": "../../../../../../../../proc/self/root",
		"root":     fs.root,
		"loop":     "loop",
	}
	for name, target := range links {
		if err := os.Symlink(target, fs.in(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(fs.secret, fs.in("hardlink")); err != nil {
		t.Fatal(err)
	}
	raw := func(s string) string { return "path=" + s } // sent exactly as written
	escapes := []struct {
		name, query string
		want        int
	}{
		{"dot-dot", path(fs.root + "/../" + out + "/secret"), 403},
		{"dot-dot deeper", path(fs.root + "/a/b/../../../" + out + "/secret"), 403},
		{"dot-dot past /", path(fs.root + strings.Repeat("/..", 20) + fs.secret), 403},
		{"percent-encoded dot-dot", raw(fs.root + "/%2e%2e/" + out + "/secret"), 403},
		{"percent-encoded slashes", raw(url.PathEscape(fs.root) + "%2f..%2f" + out + "%2fsecret"), 403},
		{"double-encoded dot-dot", raw(fs.root + "/%252e%252e/" + out + "/secret"), 404},
		{"absolute path elsewhere", path("/etc/passwd"), 403},
		{"the secret itself", path(fs.secret), 403},
		{"a sibling sharing the prefix", path(fs.root + "x/secret"), 403},
		{"the root's parent", path(filepath.Dir(fs.root)), 403},
		{"absolute symlink out", path(fs.in("abs-out")), 403},
		{"relative symlink out", path(fs.in("rel-out")), 403},
		{"through an absolute directory symlink", path(fs.in("abs-dir/secret")), 403},
		{"through a relative directory symlink", path(fs.in("rel-dir/secret")), 403},
		{"a chain of symlinks", path(fs.in("chain")), 403},
		{"symlink to /proc/self/root", path(fs.in("proc") + fs.secret), 403},
		{"relative symlink to /proc/self/root", path(fs.in("proc-rel") + fs.secret), 403},
		{"/proc/self/root in front", path("/proc/self/root" + fs.secret), 403},
		{"/proc/self/root in front of the root", path("/proc/self/root" + fs.in("x")), 403},
		{"/proc/self/cwd in front", path("/proc/self/cwd/" + fs.secret), 403},
		{"absolute symlink to the root itself", path(fs.in("root/x")), 403},
		{"symlink loop", path(fs.in("loop")), 404},
		{"NUL", raw(url.QueryEscape(fs.in("x")) + "%00/../../" + out + "/secret"), 400},
		{"relative", path(out + "/secret"), 400},
		{"backslashes (a name inside)", path(fs.root + `/..\` + out + `\secret`), 404},
		{"backslashes (a sibling outside)", path(fs.root + `\..\` + out + `\secret`), 403},
	}
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) {
			for _, route := range []string{"/files/content", "/files/stat", "/files/list", "/files/walk"} {
				code, b, _ := fs.call(t, "GET", route, e.query, nil, nil)
				if bytes.Contains(b, []byte("SECRET")) {
					t.Errorf("GET %s?%s read the secret", route, e.query)
				}
				// A read may be a 409 where the path is inside but is a directory.
				if code != e.want && !(code == 409 && e.want != 403) {
					t.Errorf("GET %s?%s = %d %s, want %d", route, e.query, code, b, e.want)
				}
			}
			code, b, _ := fs.call(t, "PUT", "/files/content", e.query+"/new", strings.NewReader("x"), nil)
			if code == 200 {
				t.Errorf("PUT %s/new = %d %s, want a refusal", e.query, code, b)
			}
		})
	}
	for _, route := range []string{"/files/copy", "/files/move"} {
		for _, body := range []string{
			fmt.Sprintf(`{"from":%q,"to":%q,"overwrite":true}`, fs.in("abs-dir/secret"), fs.in("stolen")),
			fmt.Sprintf(`{"from":%q,"to":%q,"overwrite":true}`, fs.in("hardlink"), fs.root+"/../"+out+"/planted"),
		} {
			if code, b, _ := fs.call(t, "POST", route, "", strings.NewReader(body), map[string]string{"Content-Type": "application/json"}); code != 403 {
				t.Errorf("POST %s %s = %d %s, want 403", route, body, code, b)
			}
		}
	}
	if code, b, _ := fs.call(t, "POST", "/files/remove", "", strings.NewReader(fmt.Sprintf(`{"path":%q,"recursive":true}`, fs.in("abs-dir/secret"))), map[string]string{"Content-Type": "application/json"}); code != 403 {
		t.Errorf("remove through a symlink out = %d %s, want 403", code, b)
	}
	if code, b, _ := fs.call(t, "POST", "/files/mkdir", "", strings.NewReader(fmt.Sprintf(`{"path":%q}`, fs.in("rel-dir/made"))), map[string]string{"Content-Type": "application/json"}); code != 403 {
		t.Errorf("mkdir through a symlink out = %d %s, want 403", code, b)
	}
	// A hard link is the same file: reading it reads it (documented), but a
	// write replaces the link's own entry, never the file outside.
	if code, b, _ := fs.call(t, "PUT", "/files/content", path(fs.in("hardlink")), strings.NewReader("overwritten"), nil); code != 200 {
		t.Errorf("PUT over the hard link = %d %s", code, b)
	}
	if b, err := os.ReadFile(fs.secret); err != nil || string(b) != "SECRET" {
		t.Errorf("the secret is now %q, %v; a write through a hard link reached it", b, err)
	}
	entries, _ := os.ReadDir(fs.outside)
	if len(entries) != 1 {
		t.Errorf("outside holds %d entries, want the secret alone", len(entries))
	}
}

// TestFilesSymlinkSwapOverHTTP: a directory swapped for a symlink out while
// requests go through it never lets one out.
func TestFilesSymlinkSwapOverHTTP(t *testing.T) {
	fs := startFilesServer(t)
	swap := fs.in("swap")
	if err := os.Mkdir(swap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(swap, "secret"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		real, link := fs.in("swap-real"), fs.in("swap-link")
		_ = os.Symlink(fs.outside, link)
		for !stop.Load() {
			_ = os.Rename(swap, real)
			_ = os.Rename(link, swap)
			_ = os.Rename(swap, link)
			_ = os.Rename(real, swap)
		}
	})
	leaked := 0
	for range 300 {
		if _, b, _ := fs.call(t, "GET", "/files/content", path(filepath.Join(swap, "secret")), nil, nil); bytes.Contains(b, []byte("SECRET")) {
			leaked++
		}
		fs.call(t, "PUT", "/files/content", path(filepath.Join(swap, "planted")), strings.NewReader("x"), nil)
	}
	stop.Store(true)
	wg.Wait()
	if leaked > 0 {
		t.Errorf("%d reads through a swapped symlink read the secret", leaked)
	}
	if _, err := os.Stat(filepath.Join(fs.outside, "planted")); !os.IsNotExist(err) {
		t.Errorf("a write through a swapped symlink landed outside (%v)", err)
	}
}

// TestFilesLimitsAndSecurity: an upload larger than the JSON body limit
// passes while JSON bodies keep theirs; --files-max-bytes bounds uploads and
// leaves the old file; the token and Origin rules hold on /files; a server
// without roots answers files_disabled.
func TestFilesLimitsAndSecurity(t *testing.T) {
	fs := startFilesServer(t, "--max-body-bytes", "1024", "--files-max-bytes", "100000")
	big := bytes.Repeat([]byte("x"), 50000)
	if code, b, _ := fs.call(t, "PUT", "/files/content", path(fs.in("big")), bytes.NewReader(big), nil); code != 200 {
		t.Errorf("PUT of 50 kB with a 1 kB JSON limit = %d %s, want 200", code, b)
	}
	tooBig := bytes.Repeat([]byte("y"), 100001)
	if code, b, _ := fs.call(t, "PUT", "/files/content", path(fs.in("big")), bytes.NewReader(tooBig), nil); code != 413 {
		t.Errorf("PUT beyond --files-max-bytes = %d %s, want 413", code, b)
	}
	// Undeclared length: the stream is cut at the bound, and the old file stays.
	if code, b, _ := fs.call(t, "PUT", "/files/content", path(fs.in("big")), io.MultiReader(bytes.NewReader(tooBig)), nil); code != 413 {
		t.Errorf("chunked PUT beyond --files-max-bytes = %d %s, want 413", code, b)
	}
	if b, _ := os.ReadFile(fs.in("big")); !bytes.Equal(b, big) {
		t.Errorf("an oversized upload changed the file (%d bytes)", len(b))
	}
	longJSON := fmt.Sprintf(`{"path":%q}`, fs.in(strings.Repeat("n", 2000)))
	if code, b, _ := fs.call(t, "POST", "/files/mkdir", "", strings.NewReader(longJSON), map[string]string{"Content-Type": "application/json"}); code != 413 {
		t.Errorf("a JSON body beyond --max-body-bytes = %d %s, want 413", code, b)
	}
	if code, b, _ := fs.call(t, "GET", "/files/content", path(fs.in("big")), nil, map[string]string{"Origin": "http://evil.example"}); code != 403 || jsonOf(t, b)["code"] != "forbidden_origin" {
		t.Errorf("cross-origin read = %d %s, want 403 forbidden_origin", code, b)
	}
	fs.stop(t)

	root := t.TempDir()
	token := "0123456789abcdef0123456789abcdef"
	s := startServer(t, map[string]string{"SNAPEXEC_TOKEN": token}, "--files-root", root)
	for _, m := range []string{"GET", "PUT"} {
		req, _ := http.NewRequest(m, s.url+"/files/content?"+path(root+"/f"), strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%s /files/content without the token = %d, want 401", m, resp.StatusCode)
		}
	}
	if _, err := os.Stat(root + "/f"); !os.IsNotExist(err) {
		t.Errorf("a write without the token landed (%v)", err)
	}
	s.stop(t)

	off := startServer(t, nil)
	for _, route := range []string{"/files/content", "/files/stat", "/files/list"} {
		resp, err := http.Get(off.url + route + "?" + path(root))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || jsonOf(t, b)["code"] != "files_disabled" {
			t.Errorf("GET %s without --files-root = %d %s, want 404 files_disabled", route, resp.StatusCode, b)
		}
	}
}
