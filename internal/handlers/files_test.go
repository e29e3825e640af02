package handlers

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/api"
	"github.com/snapexec/snapexec/internal/files"
)

// fakeFiles is a Files whose every method a test may replace; calling
// another panics, which the router answers 500 and the test sees.
type fakeFiles struct {
	OpenFn  func(path string) (*os.File, files.Info, error)
	StatFn  func(path string) (files.Info, error)
	ListFn  func(dir, cursor string, limit int) (files.Page, error)
	WalkFn  func(dir string, o files.WalkOptions) (files.Page, error)
	WriteFn func(path string, r io.Reader, o files.WriteOptions) (files.Info, error)
	MkdirFn func(path string) error
	RmFn    func(path string, recursive bool) error
	CopyFn  func(src, dst string, o files.WriteOptions) (files.Info, error)
	MoveFn  func(src, dst string, overwrite bool) error
}

func (f *fakeFiles) Open(p string) (*os.File, files.Info, error) { return f.OpenFn(p) }
func (f *fakeFiles) Stat(p string) (files.Info, error)           { return f.StatFn(p) }
func (f *fakeFiles) List(d, c string, l int) (files.Page, error) {
	return f.ListFn(d, c, l)
}
func (f *fakeFiles) Walk(d string, o files.WalkOptions) (files.Page, error) { return f.WalkFn(d, o) }
func (f *fakeFiles) Write(p string, r io.Reader, o files.WriteOptions) (files.Info, error) {
	return f.WriteFn(p, r, o)
}
func (f *fakeFiles) Mkdir(p string) error                  { return f.MkdirFn(p) }
func (f *fakeFiles) Remove(p string, recursive bool) error { return f.RmFn(p, recursive) }
func (f *fakeFiles) Copy(s, d string, o files.WriteOptions) (files.Info, error) {
	return f.CopyFn(s, d, o)
}
func (f *fakeFiles) Move(s, d string, overwrite bool) error { return f.MoveFn(s, d, overwrite) }

// filesRouter is the router over fs (nil: the files API off).
func filesRouter(t *testing.T, fs Files) http.Handler {
	t.Helper()
	h, err := NewRouter(New(Deps{Files: fs}, api.Spec, "test"), zerolog.Nop(), RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var fileInfoFixture = files.Info{Path: "/r/f", Type: files.TypeFile, Size: 3, Mode: 0o644, ModTime: time.Unix(1, 0), ETag: "1-2-3"}

// TestFilesTranslation: what each route passes down and answers.
func TestFilesTranslation(t *testing.T) {
	var got []string
	record := func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) }
	fs := &fakeFiles{
		WriteFn: func(p string, r io.Reader, o files.WriteOptions) (files.Info, error) {
			b, _ := io.ReadAll(r)
			ifMatch := "<nil>"
			if o.IfMatch != nil {
				ifMatch = fmt.Sprintf("%q", o.IfMatch)
			}
			record("write %s %q ifMatch=%s mustNotExist=%v", p, b, ifMatch, o.MustNotExist)
			return fileInfoFixture, nil
		},
		ListFn: func(d, c string, l int) (files.Page, error) {
			record("list %s %q %d", d, c, l)
			return files.Page{Entries: []files.Entry{{Info: fileInfoFixture, Rel: "f"}}, Next: "f"}, nil
		},
		WalkFn: func(d string, o files.WalkOptions) (files.Page, error) {
			record("walk %s %+v", d, o)
			return files.Page{}, nil
		},
		CopyFn: func(s, d string, o files.WriteOptions) (files.Info, error) {
			record("copy %s %s mustNotExist=%v", s, d, o.MustNotExist)
			return fileInfoFixture, nil
		},
		MoveFn:  func(s, d string, overwrite bool) error { record("move %s %s %v", s, d, overwrite); return nil },
		RmFn:    func(p string, recursive bool) error { record("remove %s %v", p, recursive); return nil },
		MkdirFn: func(p string) error { record("mkdir %s", p); return nil },
	}
	h := filesRouter(t, fs)
	reqs := []struct {
		method, target, body string
		header               map[string]string
		want                 int
	}{
		{"PUT", "/files/content?path=/r/f", "abc", map[string]string{"If-Match": `"1-2-3"`}, 200},
		{"PUT", "/files/content?path=/r/f", "abc", map[string]string{"If-Match": `1-2-3`}, 200},
		{"PUT", "/files/content?path=/r/f", "abc", map[string]string{"If-Match": `W/"1-2-3"`}, 200},
		{"PUT", "/files/content?path=/r/f", "abc", map[string]string{"If-Match": `"1-2-3", W/"4", "5"`}, 200},
		{"PUT", "/files/content?path=/r/f", "abc", map[string]string{"If-None-Match": "*"}, 200},
		{"GET", "/files/list?path=/r&cursor=a&limit=5", "", nil, 200},
		{"GET", "/files/walk?path=/r&maxDepth=2", "", nil, 200},
		{"POST", "/files/copy", `{"from":"/r/a","to":"/r/b"}`, nil, 200},
		{"POST", "/files/copy", `{"from":"/r/a","to":"/r/b","overwrite":true}`, nil, 200},
		{"POST", "/files/move", `{"from":"/r/a","to":"/r/b"}`, nil, 204},
		{"POST", "/files/remove", `{"path":"/r/d","recursive":true}`, nil, 204},
		{"POST", "/files/mkdir", `{"path":"/r/d/e"}`, nil, 204},
	}
	for _, r := range reqs {
		req := localRequest(r.method, r.target, strings.NewReader(r.body))
		if r.method == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != r.want {
			t.Errorf("%s %s = %d %s, want %d", r.method, r.target, rec.Code, rec.Body, r.want)
		}
	}
	want := []string{
		`write /r/f "abc" ifMatch=["1-2-3"] mustNotExist=false`,
		`write /r/f "abc" ifMatch=["1-2-3"] mustNotExist=false`,
		`write /r/f "abc" ifMatch=[] mustNotExist=false`, // weak: matches nothing
		`write /r/f "abc" ifMatch=["1-2-3" "5"] mustNotExist=false`,
		`write /r/f "abc" ifMatch=<nil> mustNotExist=true`,
		`list /r "a" 5`,
		`walk /r {Cursor: Limit:0 MaxDepth:2}`,
		`copy /r/a /r/b mustNotExist=true`,
		`copy /r/a /r/b mustNotExist=false`,
		`move /r/a /r/b false`,
		`remove /r/d true`,
		`mkdir /r/d/e`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFilesProblems: each domain error of the files package, and the
// refusals of the handlers themselves, as problems.
func TestFilesProblems(t *testing.T) {
	failing := func(err error) *fakeFiles {
		return &fakeFiles{
			OpenFn:  func(string) (*os.File, files.Info, error) { return nil, files.Info{}, err },
			StatFn:  func(string) (files.Info, error) { return files.Info{}, err },
			WriteFn: func(string, io.Reader, files.WriteOptions) (files.Info, error) { return files.Info{}, err },
			RmFn:    func(string, bool) error { return err },
			MoveFn:  func(string, string, bool) error { return err },
			CopyFn:  func(string, string, files.WriteOptions) (files.Info, error) { return files.Info{}, err },
			ListFn:  func(string, string, int) (files.Page, error) { return files.Page{}, err },
			WalkFn:  func(string, files.WalkOptions) (files.Page, error) { return files.Page{}, err },
		}
	}
	wrap := func(sentinel error) error { return fmt.Errorf("%w: /secret/server/path", sentinel) }
	tests := []struct {
		name                 string
		fs                   Files
		method, target, body string
		header               map[string]string
		status               int
		code                 ProblemCode
		field                string
	}{
		{"off", nil, "GET", "/files/stat?path=/r", "", nil, 404, FilesDisabled, ""},
		{"off, content", nil, "GET", "/files/content?path=/r", "", nil, 404, FilesDisabled, ""},
		{"off, upload", nil, "PUT", "/files/content?path=/r", "x", nil, 404, FilesDisabled, ""},
		{"outside", failing(wrap(files.ErrOutsideRoot)), "GET", "/files/stat?path=/etc", "", nil, 403, OutsideRoot, ""},
		{"not found", failing(wrap(files.ErrNotFound)), "GET", "/files/content?path=/r/x", "", nil, 404, NotFound, ""},
		{"directory", failing(wrap(files.ErrIsDirectory)), "GET", "/files/content?path=/r", "", nil, 409, IsADirectory, ""},
		{"not a directory", failing(wrap(files.ErrNotADirectory)), "GET", "/files/stat?path=/r/f/x", "", nil, 409, NotADirectory, ""},
		{"not regular", failing(wrap(files.ErrNotRegular)), "GET", "/files/content?path=/r/fifo", "", nil, 409, NotARegularFile, ""},
		{"invalid path", failing(wrap(files.ErrInvalidPath)), "GET", "/files/stat?path=r", "", nil, 400, InvalidRequest, ""},
		{"not empty", failing(wrap(files.ErrNotEmpty)), "POST", "/files/remove", `{"path":"/r/d"}`, nil, 409, NotEmpty, ""},
		{"root", failing(wrap(files.ErrIsRoot)), "POST", "/files/remove", `{"path":"/r"}`, nil, 409, IsRoot, ""},
		{"exists", failing(wrap(files.ErrExists)), "POST", "/files/move", `{"from":"/r/a","to":"/r/b"}`, nil, 409, Exists, ""},
		{"move onto a directory with entries", failing(wrap(files.ErrDestinationNotEmpty)), "POST", "/files/move", `{"from":"/r/a","to":"/r/d","overwrite":true}`, nil, 409, DestinationNotEmpty, ""},
		{"copy onto a directory with entries", failing(wrap(files.ErrDestinationNotEmpty)), "POST", "/files/copy", `{"from":"/r/a","to":"/r/d","overwrite":true}`, nil, 409, DestinationNotEmpty, ""},
		{"cross device", failing(wrap(files.ErrCrossDevice)), "POST", "/files/move", `{"from":"/r/a","to":"/s/b"}`, nil, 409, CrossDevice, ""},
		{"stale ETag", failing(wrap(files.ErrPreconditionFailed)), "PUT", "/files/content?path=/r/f", "x", map[string]string{"If-Match": `"e"`}, 412, PreconditionFailed, ""},
		{"exists under If-None-Match", failing(wrap(files.ErrExists)), "PUT", "/files/content?path=/r/f", "x", map[string]string{"If-None-Match": "*"}, 412, PreconditionFailed, ""},
		{"too large", failing(wrap(files.ErrTooLarge)), "PUT", "/files/content?path=/r/f", "x", nil, 413, BodyTooLarge, ""},
		{"cut short", failing(wrap(files.ErrCutShort)), "PUT", "/files/content?path=/r/f", "x", nil, 400, InvalidRequest, ""},
		{"into itself", failing(wrap(files.ErrMoveIntoItself)), "POST", "/files/move", `{"from":"/r/a","to":"/r/a/b"}`, nil, 400, InvalidRequest, ""},
		{"If-Match *", failing(nil), "PUT", "/files/content?path=/r/f", "x", map[string]string{"If-Match": "*"}, 400, InvalidRequest, "If-Match"},
		{"If-None-Match an ETag", failing(nil), "PUT", "/files/content?path=/r/f", "x", map[string]string{"If-None-Match": `"e"`}, 400, InvalidRequest, "If-None-Match"},
		{"Content-Range", failing(nil), "PUT", "/files/content?path=/r/f", "x", map[string]string{"Content-Range": "bytes 0-0/10"}, 400, InvalidRequest, "Content-Range"},
		{"Content-Range, empty", failing(nil), "PUT", "/files/content?path=/r/f", "x", map[string]string{"Content-Range": ""}, 400, InvalidRequest, "Content-Range"},
		{"same file, move", failing(wrap(files.ErrSameFile)), "POST", "/files/move", `{"from":"/r/link","to":"/r/f","overwrite":true}`, nil, 409, SameFile, "to"},
		{"same file, copy", failing(wrap(files.ErrSameFile)), "POST", "/files/copy", `{"from":"/r/h1","to":"/r/h2","overwrite":true}`, nil, 409, SameFile, "to"},
		{"invalid cursor, list", failing(wrap(files.ErrInvalidCursor)), "GET", "/files/list?path=/r&cursor=/", "", nil, 400, InvalidRequest, "cursor"},
		{"invalid cursor, walk", failing(wrap(files.ErrInvalidCursor)), "GET", "/files/walk?path=/r&cursor=/", "", nil, 400, InvalidRequest, "cursor"},
		{"unknown error", failing(errors.New("boom /secret/server/path")), "GET", "/files/stat?path=/r", "", nil, 500, Internal, ""},
		{"missing path", failing(nil), "GET", "/files/stat", "", nil, 400, InvalidRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := localRequest(tt.method, tt.target, strings.NewReader(tt.body))
			if tt.method == "POST" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			filesRouter(t, tt.fs).ServeHTTP(rec, req)
			p := decodeProblem(t, rec)
			if rec.Code != tt.status || p.Code != tt.code {
				t.Errorf("%s %s = %d %s, want %d %s", tt.method, tt.target, rec.Code, p.Code, tt.status, tt.code)
			}
			if tt.field != "" && deref(p.Field) != tt.field {
				t.Errorf("%s %s names the field %q, want %q", tt.method, tt.target, deref(p.Field), tt.field)
			}
			if strings.Contains(rec.Body.String(), "/secret/server/path") {
				t.Errorf("the answer quotes the cause: %s", rec.Body)
			}
		})
	}
}

// TestFilesUploadCutShort: an upload whose client half-closes before the
// body's declared end (a Content-Length not reached, a chunked body without
// its last chunk) is refused with 400 and leaves the old file as it was,
// whether it is read through net/http or, from 1 MiB, spliced from the
// socket.
func TestFilesUploadCutShort(t *testing.T) {
	root := t.TempDir()
	fsys, err := files.New([]string{root}, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	limit, _ := newConnLimit(t, 16) // which gives the handler its connection, to splice from
	srv := serveRouter(t, filesRouter(t, fsys), limit)
	dst := filepath.Join(root, "up.txt")
	if err := os.WriteFile(dst, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, header, body string }{
		{"chunked, no last chunk", "Transfer-Encoding: chunked", "5\r\nhello\r\n"},
		{"500 bytes of 1000", "Content-Length: 1000", strings.Repeat("x", 500)},
		{"1 MiB of 2, spliced", "Content-Length: 2097152", strings.Repeat("x", 1<<20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := rawRequest(t, srv, "PUT /files/content?path="+url.QueryEscape(dst)+" HTTP/1.1\nHost: 127.0.0.1\n"+tt.header+"\n", tt.body)
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			resp, body := readAnswer(t, c, br)
			var p Problem
			_ = json.Unmarshal([]byte(body), &p)
			if resp.StatusCode != http.StatusBadRequest || p.Code != InvalidRequest || deref(p.Field) != "body" {
				t.Errorf("answer %d %s, want 400 invalid_request for the field body", resp.StatusCode, body)
			}
			if got, err := os.ReadFile(dst); err != nil || string(got) != "old" {
				t.Errorf("the file holds %q (%v), want the old content", got, err)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 1 {
				t.Errorf("the root holds %d entries, want the file alone (no temporary file left)", len(entries))
			}
		})
	}
}

// TestReadFileRanges: a Range is answered as RFC 9110 says (14.1.2, 15.5.17):
// a range is satisfiable when it starts within the file or is a suffix of a
// length other than zero; the unsatisfiable ones of a set are left out; a
// set of none is 416 with Content-Range: bytes */length, an empty file's
// too; and a suffix of an empty file, which no 206 can say, is the whole
// file, 200; a Range of another unit is ignored. The conditions come first: an If-Range of another version
// sends the whole file.
func TestReadFileRanges(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, rng, ifRange string
		status                      int
		contentRange, body          string
	}{
		{"a range", "hello", "bytes=1-2", "", 206, "bytes 1-2/5", "el"},
		{"a suffix", "hello", "bytes=-3", "", 206, "bytes 2-4/5", "llo"},
		{"a suffix of zero", "hello", "bytes=-0", "", 416, "bytes */5", ""},
		{"beyond the end", "hello", "bytes=5-", "", 416, "bytes */5", ""},
		{"a suffix of zero in a set", "hello", "bytes=0-0,-0", "", 206, "bytes 0-0/5", "h"},
		{"two suffixes of zero", "hello", "bytes=-0, -0", "", 416, "bytes */5", ""},
		{"no range", "", "", "", 200, "", ""},
		{"the first byte of an empty file", "", "bytes=0-", "", 416, "bytes */0", ""},
		{"a range of an empty file", "", "bytes=0-0", "", 416, "bytes */0", ""},
		{"a suffix of zero of an empty file", "", "bytes=-0", "", 416, "bytes */0", ""},
		{"a suffix of an empty file", "", "bytes=-5", "", 200, "", ""},
		{"a suffix and a range of an empty file", "", "bytes=0-1,-5", "", 200, "", ""},
		{"unsatisfiable under If-Range of another version", "", "bytes=0-", `"other"`, 200, "", ""},
		{"unsatisfiable under If-Range of this version", "", "bytes=0-", `"e"`, 416, "bytes */0", ""},
		// A unit other than bytes is ignored (14.2: MUST).
		{"another unit", "hello", "items=0-1", "", 200, "", "hello"},
		{"another unit beyond the end", "hello", "lines=9-", "", 200, "", "hello"},
		{"the unit's case", "hello", "Bytes=0-0", "", 206, "bytes 0-0/5", "h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "f")
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := &fakeFiles{OpenFn: func(string) (*os.File, files.Info, error) {
				f, err := os.Open(p)
				return f, files.Info{Path: p, Type: files.TypeFile, Size: int64(len(tt.content)), ModTime: time.Unix(1, 0), ETag: "e"}, err
			}}
			req := localRequest("GET", "/files/content?path="+url.QueryEscape(p), nil)
			if tt.rng != "" {
				req.Header.Set("Range", tt.rng)
			}
			if tt.ifRange != "" {
				req.Header.Set("If-Range", tt.ifRange)
			}
			rec := httptest.NewRecorder()
			filesRouter(t, fs).ServeHTTP(rec, req)
			what := fmt.Sprintf("GET %q of %q bytes (If-Range %s)", tt.rng, tt.content, tt.ifRange)
			if got := rec.Header().Get("Content-Range"); rec.Code != tt.status || got != tt.contentRange {
				t.Fatalf("%s = %d, Content-Range %q; want %d, %q", what, rec.Code, got, tt.status, tt.contentRange)
			}
			if tt.status == 416 {
				if p := decodeProblem(t, rec); p.Code != RangeNotSatisfiable {
					t.Errorf("%s answered %s, want range_not_satisfiable", what, rec.Body)
				}
			} else if rec.Body.String() != tt.body {
				t.Errorf("%s sent %q, want %q", what, rec.Body, tt.body)
			}
		})
	}
}

// TestWriteFileIfMatch: If-Match on a write is a list of ETags (RFC 9110,
// 13.1.1), quoted or bare, any one of which matching is enough, its lines
// one list (5.3); it compares strongly, so that a weak ETag matches no
// version; "*" is refused, as the contract says, alone or in a list.
func TestWriteFileIfMatch(t *testing.T) {
	const current = "1-2-3"
	fs := &fakeFiles{WriteFn: func(_ string, r io.Reader, o files.WriteOptions) (files.Info, error) {
		if o.IfMatch != nil && !slices.Contains(o.IfMatch, current) {
			return files.Info{}, fmt.Errorf("%w: /r/f", files.ErrPreconditionFailed)
		}
		_, _ = io.Copy(io.Discard, r)
		return fileInfoFixture, nil
	}}
	h := filesRouter(t, fs)
	tests := []struct {
		lines  []string
		status int
	}{
		{nil, 200},
		{[]string{""}, 200}, // no value: no condition, as it always was
		{[]string{`"1-2-3"`}, 200},
		{[]string{`1-2-3`}, 200},
		{[]string{` "1-2-3" `}, 200},
		{[]string{`"other"`}, 412},
		{[]string{`W/"1-2-3"`}, 412},
		{[]string{`W/1-2-3`}, 412},
		{[]string{`"1-2-3", "other"`}, 200},
		{[]string{`"other", "1-2-3"`}, 200},
		{[]string{`"other",,"1-2-3",`}, 200},
		{[]string{`other, 1-2-3`}, 200},
		{[]string{`"other", W/"1-2-3"`}, 412},
		{[]string{`"other"`, `"1-2-3"`}, 200},
		{[]string{`"1-2-3"`, `"other"`}, 200},
		{[]string{`W/"1-2-3"`, `"other"`}, 412},
		{[]string{`,`}, 412}, // a list of none: nothing matches
		{[]string{`*`}, 400},
		{[]string{`"1-2-3", *`}, 400},
		{[]string{`"1-2-3"`, `*`}, 400},
		{[]string{`"1-2-3`}, 400},
		{[]string{`"1-2-3" "other"`}, 400},
		{[]string{`W/`}, 400},
	}
	for _, tt := range tests {
		req := localRequest("PUT", "/files/content?path=/r/f", strings.NewReader("x"))
		for _, line := range tt.lines {
			req.Header.Add("If-Match", line)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("PUT with If-Match lines %q = %d %s, want %d", tt.lines, rec.Code, rec.Body, tt.status)
			continue
		}
		if tt.status != 200 {
			if p := decodeProblem(t, rec); deref(p.Field) != "If-Match" {
				t.Errorf("PUT with If-Match lines %q names the field %q, want If-Match", tt.lines, deref(p.Field))
			}
		}
	}
	// A weak ETag's 412 says why, where the file did not change.
	req := localRequest("PUT", "/files/content?path=/r/f", strings.NewReader("x"))
	req.Header.Set("If-Match", `W/"1-2-3"`)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if p := decodeProblem(t, rec); !strings.Contains(deref(p.Detail), "weak") {
		t.Errorf("the 412 of a weak ETag says %q, want why", deref(p.Detail))
	}
}

// TestReadFileConditionLines: the lines of If-Match and If-None-Match on a
// read are one list, as on a write (http.ServeContent reads the first line
// alone).
func TestReadFileConditionLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := &fakeFiles{OpenFn: func(string) (*os.File, files.Info, error) {
		f, err := os.Open(p)
		return f, files.Info{Path: p, Type: files.TypeFile, Size: 5, ModTime: time.Unix(1, 0), ETag: "e"}, err
	}}
	h := filesRouter(t, fs)
	tests := []struct {
		header string
		lines  []string
		status int
	}{
		{"If-Match", []string{`"other"`, `"e"`}, 200},
		{"If-Match", []string{`"other"`, `W/"e"`}, 412},
		{"If-None-Match", []string{`"other"`, `"e"`}, 304},
	}
	for _, tt := range tests {
		req := localRequest("GET", "/files/content?path="+url.QueryEscape(p), nil)
		for _, line := range tt.lines {
			req.Header.Add(tt.header, line)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("GET with %s lines %q = %d %s, want %d", tt.header, tt.lines, rec.Code, rec.Body, tt.status)
		}
	}
}

// TestFilesNamesNotUTF8: a name or a path that is not UTF-8, which JSON
// sends with U+FFFD for each invalid byte, is sent exactly as well, in
// nameBase64 and pathBase64; one that is UTF-8 has neither. The cursor is
// passed through as the files package writes it.
func TestFilesNamesNotUTF8(t *testing.T) {
	bad := files.Info{Path: "/r/bad\xffname", Type: files.TypeFile, ModTime: time.Unix(1, 0), ETag: "e"}
	fs := &fakeFiles{
		ListFn: func(string, string, int) (files.Page, error) {
			return files.Page{Entries: []files.Entry{{Info: fileInfoFixture, Rel: "f"}, {Info: bad, Rel: "bad\xffname"}}, Next: "/YmFk_25hbWU"}, nil
		},
		StatFn: func(string) (files.Info, error) { return bad, nil },
	}
	h := filesRouter(t, fs)
	req := localRequest("GET", "/files/list?path=/r&limit=2", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var page struct {
		Entries []map[string]any
		Next    string
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || rec.Code != 200 || len(page.Entries) != 2 {
		t.Fatalf("list = %d %s (%v)", rec.Code, rec.Body, err)
	}
	if e := page.Entries[0]; e["nameBase64"] != nil || e["pathBase64"] != nil {
		t.Errorf("a UTF-8 entry = %v, want no nameBase64 nor pathBase64", e)
	}
	want := map[string]any{
		"name":       "bad\ufffdname",
		"path":       "/r/bad\ufffdname",
		"nameBase64": base64.StdEncoding.EncodeToString([]byte("bad\xffname")),
		"pathBase64": base64.StdEncoding.EncodeToString([]byte("/r/bad\xffname")),
	}
	for k, v := range want {
		if page.Entries[1][k] != v {
			t.Errorf("entry's %s = %v, want %v", k, page.Entries[1][k], v)
		}
	}
	if page.Next != "/YmFk_25hbWU" {
		t.Errorf("next = %q, want the files package's cursor", page.Next)
	}
	req = localRequest("GET", "/files/stat?path=/r/bad%FFname", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var info map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || info["pathBase64"] != want["pathBase64"] {
		t.Errorf("stat = %d %s, want pathBase64 %v", rec.Code, rec.Body, want["pathBase64"])
	}
}
