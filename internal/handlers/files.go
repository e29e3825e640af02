package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapexec/snapexec/internal/files"
)

// Files is the file system beneath the server's roots; *files.FS is one.
type Files interface {
	Open(path string) (*os.File, files.Info, error)
	Stat(path string) (files.Info, error)
	List(dir, cursor string, limit int) (files.Page, error)
	Walk(dir string, o files.WalkOptions) (files.Page, error)
	Write(path string, r io.Reader, o files.WriteOptions) (files.Info, error)
	Mkdir(path string) error
	Remove(path string, recursive bool) error
	Copy(src, dst string, o files.WriteOptions) (files.Info, error)
	Move(src, dst string, overwrite bool) error
}

// errFilesDisabled answers every /files route of a server without roots.
var errFilesDisabled = &problem{status: http.StatusNotFound, code: FilesDisabled,
	detail: "the files API is off: the server was started without --files-root"}

// readFile serves GET /files/content: the file streamed, with Range, ETag
// and the conditional headers as http.ServeContent answers them, but for
// the ranges it cannot satisfy (satisfiableRanges).
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	if s.files == nil {
		writeProblem(w, r, errFilesDisabled)
		return
	}
	f, info, err := s.files.Open(r.URL.Query().Get("path"))
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	defer f.Close()
	// ServeContent reads the first line of each alone; the lines of a
	// list are one list (RFC 9110, 5.3), as on a write.
	for _, name := range []string{"If-Match", "If-None-Match"} {
		if lines := r.Header.Values(name); len(lines) > 1 {
			r.Header.Set(name, strings.Join(lines, ", "))
		}
	}
	if h := r.Header.Get("Range"); h != "" && !bytesRange(h) {
		// A unit ServeContent does not know either: ignored, as RFC
		// 9110 (14.2) requires, where ServeContent answers 416.
		r.Header.Del("Range")
	} else if h != "" {
		// ServeContent sends a suffix of zero as "bytes 5-4/5", and
		// ignores any range of an empty file, or sends "bytes 0--1/0":
		// it is given the ranges RFC 9110 satisfies, and still checks the
		// conditions first (If-Match, If-None-Match, If-Range).
		if kept, ok := satisfiableRanges(h, info.Size); ok {
			switch {
			case kept == "":
				r.Header.Set("Range", unsatisfiableRange)
			case info.Size == 0:
				// Suffixes of the empty file: no 206 can say zero bytes.
				r.Header.Del("Range")
			default:
				r.Header.Set("Range", kept)
			}
		}
	}
	w.Header().Set("ETag", quoteETag(info.ETag))
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(&contentWriter{ResponseWriter: w, r: r, size: info.Size}, r, "", info.ModTime, f)
}

// bytesRange reports whether the Range value h is of the unit bytes, the
// one range unit a file's content has; a value without "=" is taken to be,
// and left to satisfiableRanges and ServeContent to refuse.
func bytesRange(h string) bool {
	unit, _, found := strings.Cut(h, "=")
	return !found || strings.EqualFold(strings.TrimSpace(unit), "bytes")
}

// unsatisfiableRange stands for a Range of which no range can be satisfied:
// a value that ServeContent refuses, 416, whatever the file's size, once
// the conditions are checked (its own no-overlap answer is a 200 for an
// empty file).
const unsatisfiableRange = "bytes=unsatisfiable"

// satisfiableRanges returns the ranges of the Range value h that a file of
// size bytes satisfies (RFC 9110, 14.1.2: an int-range that starts within
// it, a suffix-range of a length other than zero), as a Range value with
// the numbers cut to the file, or "" when there are none. ok is false for a
// value that does not parse, left to ServeContent.
func satisfiableRanges(h string, size int64) (kept string, ok bool) {
	_, set, found := strings.Cut(h, "=")
	if !found || !bytesRange(h) {
		return "", false
	}
	var keep []string
	for spec := range strings.SplitSeq(set, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue // a list may have empty elements (RFC 9110, 5.6.1)
		}
		first, last, found := strings.Cut(spec, "-")
		if !found {
			return "", false
		}
		if first == "" {
			n, ok := decimal(last)
			switch {
			case !ok:
				return "", false
			case n > 0:
				keep = append(keep, "-"+strconv.FormatInt(min(n, size), 10))
			}
			continue
		}
		a, ok := decimal(first)
		if !ok {
			return "", false
		}
		b := int64(math.MaxInt64)
		if last != "" {
			if b, ok = decimal(last); !ok || b < a {
				return "", false
			}
		}
		if a < size {
			keep = append(keep, strconv.FormatInt(a, 10)+"-"+strconv.FormatInt(min(b, size-1), 10))
		}
	}
	if len(keep) == 0 {
		return "", true
	}
	return "bytes=" + strings.Join(keep, ","), true
}

// decimal is the non-negative decimal s, at most math.MaxInt64.
func decimal(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64, true // all digits: too large
	}
	return n, true
}

// writeFile serves PUT /files/content: the body streamed into an atomic
// write, conditioned by If-Match or If-None-Match: *.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	if s.files == nil {
		writeProblem(w, r, errFilesDisabled)
		return
	}
	// RFC 9110 (14.5): a server that does not apply a partial PUT must
	// refuse it with 400; ignored, Content-Range would have the part
	// replace the whole file. Refused from the headers, before the body is
	// read or anything written.
	if r.Header.Values("Content-Range") != nil {
		writeProblem(w, r, invalid("Content-Range", "a write replaces the whole file with the body: partial writes (Content-Range) are not supported, and nothing was written; send the whole file without Content-Range"))
		return
	}
	var o files.WriteOptions
	weakOnly := false
	if lines := r.Header.Values("If-Match"); strings.TrimSpace(strings.Join(lines, "")) != "" {
		tags, weak, err := ifMatchTags(lines)
		if err != nil {
			writeProblem(w, r, err)
			return
		}
		o.IfMatch, weakOnly = tags, len(tags) == 0 && weak > 0
	}
	switch nm := strings.Join(r.Header.Values("If-None-Match"), ", "); nm {
	case "":
	case "*":
		o.MustNotExist = true
	default:
		writeProblem(w, r, invalid("If-None-Match", `If-None-Match on a write takes "*" only`))
		return
	}
	info, err := s.files.Write(r.URL.Query().Get("path"), uploadBody(r), o)
	switch {
	case errors.Is(err, files.ErrExists):
		// Refused by the client's own condition: HTTP's answer is 412.
		err = &problem{status: http.StatusPreconditionFailed, code: PreconditionFailed, field: "If-None-Match", detail: "the file exists", cause: err}
	case errors.Is(err, files.ErrPreconditionFailed) && weakOnly:
		err = &problem{status: http.StatusPreconditionFailed, code: PreconditionFailed, field: "If-Match",
			detail: "If-Match named weak ETags (W/) alone, and it compares strongly (RFC 9110): a weak ETag matches no version; send the ETag as stat or read gives it", cause: err}
	case err != nil:
		if p := bodyReadProblem(err); p != nil {
			err = p
		}
	}
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	w.Header().Set("ETag", quoteETag(info.ETag))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(fileInfo(info))
}

// ifMatchTags reads the lines of an If-Match as one list (RFC 9110, 5.3)
// of entity tags, quoted or bare (the contract takes an ETag without its
// quotes too), and returns the opaque tags of the strong ones; weak counts
// the others. If-Match compares strongly (13.1.1), so that a weak tag
// matches no version and is left out: a list of weak tags alone is an empty
// list, which no version matches. "*" is refused, alone or in a list, as it
// always was: a write names the version it replaces.
func ifMatchTags(lines []string) (tags []string, weak int, err error) {
	malformed := invalid("If-Match", `If-Match is a comma-separated list of ETags from stat or read, each quoted ("...") or bare`)
	tags = []string{}
	for _, s := range lines {
		for {
			s = strings.TrimLeft(s, " \t")
			if s == "" {
				break
			}
			if s[0] == ',' {
				s = s[1:] // a list may have empty elements (5.6.1)
				continue
			}
			isWeak := strings.HasPrefix(s, "W/")
			if isWeak {
				s = s[2:]
			}
			var tag string
			if s != "" && s[0] == '"' {
				end := strings.IndexByte(s[1:], '"')
				if end < 0 {
					return nil, 0, malformed
				}
				tag, s = s[1:1+end], s[2+end:]
			} else {
				end := strings.IndexAny(s, ", \t\"")
				if end < 0 {
					end = len(s)
				}
				if tag, s = s[:end], s[end:]; tag == "" {
					return nil, 0, malformed
				}
				if tag == "*" {
					return nil, 0, invalid("If-Match", `If-Match takes ETags from stat or read, not "*"`)
				}
			}
			if s = strings.TrimLeft(s, " \t"); s != "" && s[0] != ',' {
				return nil, 0, malformed
			}
			if isWeak {
				weak++
			} else {
				tags = append(tags, tag)
			}
		}
	}
	return tags, weak, nil
}

// StatFile describes one entry.
func (s *Server) StatFile(_ context.Context, req StatFileRequestObject) (StatFileResponseObject, error) {
	if s.files == nil {
		return nil, errFilesDisabled
	}
	info, err := s.files.Stat(req.Params.Path)
	if err != nil {
		return nil, err
	}
	etag := quoteETag(info.ETag)
	return StatFile200JSONResponse{Body: fileInfo(info), Headers: StatFile200ResponseHeaders{ETag: &etag}}, nil
}

// ListDirectory answers a page of a directory.
func (s *Server) ListDirectory(_ context.Context, req ListDirectoryRequestObject) (ListDirectoryResponseObject, error) {
	if s.files == nil {
		return nil, errFilesDisabled
	}
	page, err := s.files.List(req.Params.Path, orZero(req.Params.Cursor), orZero(req.Params.Limit))
	if err != nil {
		return nil, err
	}
	return ListDirectory200JSONResponse(filePage(page)), nil
}

// WalkDirectory answers a page of a tree.
func (s *Server) WalkDirectory(_ context.Context, req WalkDirectoryRequestObject) (WalkDirectoryResponseObject, error) {
	if s.files == nil {
		return nil, errFilesDisabled
	}
	p := req.Params
	page, err := s.files.Walk(p.Path, files.WalkOptions{Cursor: orZero(p.Cursor), Limit: orZero(p.Limit), MaxDepth: orZero(p.MaxDepth)})
	if err != nil {
		return nil, err
	}
	return WalkDirectory200JSONResponse(filePage(page)), nil
}

// MakeDirectory makes a directory and its missing parents.
func (s *Server) MakeDirectory(_ context.Context, req MakeDirectoryRequestObject) (MakeDirectoryResponseObject, error) {
	if s.files == nil {
		return nil, errFilesDisabled
	}
	if err := s.files.Mkdir(req.Body.Path); err != nil {
		return nil, err
	}
	return MakeDirectory204Response{}, nil
}

// RemoveFile removes an entry, a tree with recursive.
func (s *Server) RemoveFile(_ context.Context, req RemoveFileRequestObject) (RemoveFileResponseObject, error) {
	if s.files == nil {
		return nil, errFilesDisabled
	}
	if err := s.files.Remove(req.Body.Path, orZero(req.Body.Recursive)); err != nil {
		return nil, err
	}
	return RemoveFile204Response{}, nil
}

// CopyFile copies a regular file.
func (s *Server) CopyFile(_ context.Context, req CopyFileRequestObject) (CopyFileResponseObject, error) {
	if s.files == nil {
		return nil, errFilesDisabled
	}
	b := req.Body
	info, err := s.files.Copy(b.From, b.To, files.WriteOptions{MustNotExist: !orZero(b.Overwrite)})
	if err != nil {
		return nil, err
	}
	return CopyFile200JSONResponse(fileInfo(info)), nil
}

// MoveFile renames an entry.
func (s *Server) MoveFile(_ context.Context, req MoveFileRequestObject) (MoveFileResponseObject, error) {
	if s.files == nil {
		return nil, errFilesDisabled
	}
	if err := s.files.Move(req.Body.From, req.Body.To, orZero(req.Body.Overwrite)); err != nil {
		return nil, err
	}
	return MoveFile204Response{}, nil
}

func fileInfo(in files.Info) FileInfo {
	return FileInfo{Path: in.Path, PathBase64: unlessUTF8(in.Path), Type: FileInfoType(in.Type), Size: in.Size, Mode: int(in.Mode), ModifiedAt: in.ModTime.UTC(), Etag: in.ETag}
}

func filePage(p files.Page) FilePage {
	out := FilePage{Entries: make([]FileEntry, len(p.Entries))}
	for i, e := range p.Entries {
		out.Entries[i] = FileEntry{Path: e.Path, PathBase64: unlessUTF8(e.Path), Name: e.Rel, NameBase64: unlessUTF8(e.Rel),
			Type: FileEntryType(e.Type), Size: e.Size, Mode: int(e.Mode), ModifiedAt: e.ModTime.UTC(), Etag: e.ETag}
	}
	if p.Next != "" {
		out.Next = &p.Next
	}
	return out
}

// unlessUTF8 is a name's bytes when they are not UTF-8, for the field that
// sends them exactly: JSON sends a string's invalid bytes as U+FFFD, so
// that two names can look the same and neither can be named back.
func unlessUTF8(name string) *[]byte {
	if utf8.ValidString(name) {
		return nil
	}
	b := []byte(name)
	return &b
}

// quoteETag is an ETag as HTTP sends it.
func quoteETag(etag string) string { return `"` + etag + `"` }

// contentWriter turns the plain-text refusals http.ServeContent writes (416
// for a range beyond the file, 412 for an If-Match of another version) into
// the API's problems. A 416 says the file's size, as RFC 9110 asks
// (15.5.17), whatever ServeContent refused.
type contentWriter struct {
	http.ResponseWriter
	r      *http.Request
	size   int64
	failed bool
}

func (w *contentWriter) WriteHeader(code int) {
	var p *problem
	switch code {
	case http.StatusRequestedRangeNotSatisfiable:
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(w.size, 10))
		p = &problem{status: code, code: RangeNotSatisfiable, field: "Range", detail: "no range asked for lies within the file"}
	case http.StatusPreconditionFailed:
		p = &problem{status: code, code: PreconditionFailed, field: "If-Match", detail: "the file is not the version If-Match names"}
	default:
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.failed = true
	writeProblem(w.ResponseWriter, w.r, p)
}

func (w *contentWriter) Write(b []byte) (int, error) {
	if w.failed {
		return len(b), nil // ServeContent's text, replaced by the problem
	}
	return w.ResponseWriter.Write(b)
}
