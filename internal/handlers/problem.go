package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/rs/zerolog"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/files"
	"github.com/snapexec/snapexec/internal/sandbox"
	"github.com/snapexec/snapexec/internal/service"
	"github.com/snapexec/snapexec/internal/session"
	"github.com/snapexec/snapexec/internal/shellsnap"
)

// problem is an error that knows what the client sees: a status, a stable code
// and a detail written for the client. Its cause is only logged.
type problem struct {
	status     int
	code       ProblemCode
	detail     string
	field      string
	retryAfter int // seconds, for 429 and 503; zero means no header
	cause      error
}

func (p *problem) Error() string {
	if p.cause != nil {
		return fmt.Sprintf("%s: %s: %v", p.code, p.detail, p.cause)
	}
	return fmt.Sprintf("%s: %s", p.code, p.detail)
}

func (p *problem) Unwrap() error { return p.cause }

var errShuttingDown = &problem{status: http.StatusServiceUnavailable, code: ShuttingDown, detail: "the server is shutting down"}

// invalid is a 400 problem about one request field.
func invalid(field, detail string) error {
	return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: field, detail: detail}
}

func invalidf(field, format string, args ...any) error {
	return invalid(field, fmt.Sprintf(format, args...))
}

// problemFor maps any error to what the client sees: the one table from domain
// errors to statuses. Errors it does not know are internal; their text stays in
// the log.
func problemFor(err error) *problem {
	var p *problem
	if errors.As(err, &p) {
		return p
	}
	var fe *service.FieldError
	var pe *envpolicy.FieldError
	var se *sandbox.FieldError
	var notRead *service.StdinNotReadError
	var ue *sandbox.UnavailableError
	var ce *shellsnap.CaptureError
	var prog *service.ProgramError
	switch {
	case errors.As(err, &se):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: se.Field, detail: se.Error(), cause: err}
	case errors.As(err, &ue):
		return &problem{status: http.StatusUnprocessableEntity, code: SandboxUnavailable, field: "sandbox",
			detail: "the sandbox cannot be enforced on this server, so nothing ran: it lacks " + strings.Join(ue.Missing, "; "), cause: err}
	case errors.As(err, &fe):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: fe.Field, detail: fe.Reason, cause: err}
	case errors.As(err, &pe):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: pe.Field, detail: pe.Error(), cause: err}
	case errors.Is(err, exec.ErrCwdNotFound):
		return &problem{status: http.StatusUnprocessableEntity, code: CwdNotFound, field: "cwd", detail: "the working directory does not exist or is not a directory", cause: err}
	case errors.As(err, &prog):
		return &problem{status: http.StatusUnprocessableEntity, code: SpawnFailed, field: prog.Field, detail: "the shell could not be started: it was not found or is not executable", cause: err}
	case errors.Is(err, exec.ErrSpawn):
		return &problem{status: http.StatusUnprocessableEntity, code: SpawnFailed, field: "argv", detail: "the program could not be started: it was not found or is not executable", cause: err}
	case errors.Is(err, shellsnap.ErrInvalidScope):
		return &problem{status: http.StatusUnprocessableEntity, code: InvalidScope, field: "shellSnapshot.scopeId", detail: err.Error(), cause: err}
	case errors.Is(err, shellsnap.ErrUnsupportedShell):
		return &problem{status: http.StatusUnprocessableEntity, code: UnsupportedShell, field: "shellSnapshot.shell.name", detail: "shell snapshots support bash, zsh and sh", cause: err}
	case errors.Is(err, session.ErrNotFound):
		return &problem{status: http.StatusNotFound, code: NotFound, detail: "no such session", cause: err}
	case errors.Is(err, session.ErrBusy):
		return &problem{status: http.StatusConflict, code: SessionBusy, detail: "the session is running a command: its commands run one at a time", cause: err}
	case errors.Is(err, session.ErrExists):
		return &problem{status: http.StatusConflict, code: SessionExists, field: "sessionId", detail: "a session already has this sessionId", cause: err}
	case errors.Is(err, session.ErrTooMany):
		return &problem{status: http.StatusTooManyRequests, code: TooManySessions, retryAfter: 1, detail: "the server holds as many sessions as it may; delete one or retry later", cause: err}
	case errors.Is(err, session.ErrClosed):
		return errShuttingDown
	case errors.Is(err, shellsnap.ErrSessionShell):
		return &problem{status: http.StatusUnprocessableEntity, code: UnsupportedShell, field: "shell.name", detail: "sessions support bash and zsh", cause: err}
	case errors.Is(err, service.ErrSessionStart):
		return &problem{status: http.StatusBadGateway, code: SessionStartFailed, detail: err.Error(), cause: err}
	case errors.Is(err, service.ErrNotFound):
		return &problem{status: http.StatusNotFound, code: NotFound, detail: "no such resource", cause: err}
	case errors.As(err, &ce):
		return &problem{status: http.StatusBadGateway, code: CaptureFailed, detail: string(ce.Reason) + ": " + ce.Message, cause: err}
	case errors.Is(err, exec.ErrProcessExists):
		return &problem{status: http.StatusConflict, code: ProcessExists, field: "processId", detail: "a live or retained process already has this processId", cause: err}
	case errors.Is(err, exec.ErrTooManyProcesses):
		return &problem{status: http.StatusTooManyRequests, code: TooManyProcesses, retryAfter: 1, detail: "too many processes are running; retry later", cause: err}
	case errors.Is(err, exec.ErrSeqAhead):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "afterSeq", detail: "afterSeq is beyond the output produced so far: pass nextSeq minus one", cause: err}
	case errors.Is(err, exec.ErrOutputLost):
		return &problem{status: http.StatusGone, code: OutputLost, field: "afterSeq", detail: "the output asked for was evicted from the retained buffer", cause: err}
	case errors.Is(err, exec.ErrProcessExited):
		return &problem{status: http.StatusConflict, code: ProcessExited, detail: "the process has exited: it has no stdin or terminal any more", cause: err}
	case errors.Is(err, exec.ErrNotATTY):
		return &problem{status: http.StatusConflict, code: NotATty, detail: "the process was started without tty: it has no terminal to resize", cause: err}
	case errors.As(err, &notRead):
		return &problem{status: http.StatusConflict, code: StdinNotRead, detail: notRead.Error() + ": retry with the same writeId to write the rest", cause: err}
	case errors.Is(err, exec.ErrWriteIDReused):
		return &problem{status: http.StatusConflict, code: WriteIdReused, field: "writeId", detail: "an earlier write used this writeId for other data; nothing was written: a retry must carry the same data, and a new write a new writeId", cause: err}
	case errors.Is(err, exec.ErrStdinClosed):
		return &problem{status: http.StatusConflict, code: StdinClosed, detail: "stdin is not open: start the process with pipeStdin, and do not close it before writing", cause: err}
	case errors.Is(err, exec.ErrShuttingDown):
		return errShuttingDown
	case errors.Is(err, files.ErrOutsideRoot):
		return &problem{status: http.StatusForbidden, code: OutsideRoot, detail: "the path leads outside the server's --files-root directories", cause: err}
	case errors.Is(err, files.ErrInvalidPath):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "path", detail: "a path must be absolute, without NUL, at most 4096 bytes, and each of its names at most 255", cause: err}
	case errors.Is(err, files.ErrNotFound):
		return &problem{status: http.StatusNotFound, code: NotFound, detail: "no such file or directory", cause: err}
	case errors.Is(err, files.ErrIsDirectory):
		return &problem{status: http.StatusConflict, code: IsADirectory, detail: "the path is a directory", cause: err}
	case errors.Is(err, files.ErrNotADirectory):
		return &problem{status: http.StatusConflict, code: NotADirectory, detail: "the path, or one of its parents, is not a directory", cause: err}
	case errors.Is(err, files.ErrNotRegular):
		return &problem{status: http.StatusConflict, code: NotARegularFile, detail: "the path is a FIFO, a socket or a device, not a regular file", cause: err}
	case errors.Is(err, files.ErrNotEmpty):
		return &problem{status: http.StatusConflict, code: NotEmpty, field: "recursive", detail: "the directory is not empty; remove it with recursive", cause: err}
	case errors.Is(err, files.ErrDestinationNotEmpty):
		return &problem{status: http.StatusConflict, code: DestinationNotEmpty, field: "to", detail: "the destination is a directory with entries, which nothing replaces: remove it first (recursive)", cause: err}
	case errors.Is(err, files.ErrExists):
		return &problem{status: http.StatusConflict, code: Exists, field: "overwrite", detail: "the destination exists; replace it with overwrite", cause: err}
	case errors.Is(err, files.ErrPreconditionFailed):
		return &problem{status: http.StatusPreconditionFailed, code: PreconditionFailed, field: "If-Match", detail: "the file changed or was removed since the ETag If-Match names", cause: err}
	case errors.Is(err, files.ErrTooLarge):
		return &problem{status: http.StatusRequestEntityTooLarge, code: BodyTooLarge, detail: "the file is larger than the server's --files-max-bytes", cause: err}
	case errors.Is(err, files.ErrSameFile):
		return &problem{status: http.StatusConflict, code: SameFile, field: "to",
			detail: "from and to are the same file (one path and another to it, two hard links of one file, or a symlink and the file it leads to); nothing was changed", cause: err}
	case errors.Is(err, files.ErrInvalidCursor):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "cursor",
			detail: "the cursor is not one a page gave: pass the next of the previous page as it came", cause: err}
	case errors.Is(err, files.ErrIsRoot):
		return &problem{status: http.StatusConflict, code: IsRoot, detail: "a files root itself cannot be removed, moved or replaced", cause: err}
	case errors.Is(err, files.ErrCrossDevice):
		return &problem{status: http.StatusConflict, code: CrossDevice, detail: "a move cannot cross filesystems; copy, then remove", cause: err}
	case errors.Is(err, files.ErrMoveIntoItself):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "to", detail: "a directory cannot be moved into itself or beneath itself", cause: err}
	case errors.Is(err, files.ErrCutShort):
		return &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "body", detail: "the body ended before its declared end (Content-Length, or a chunked body's last chunk); the file was left as it was", cause: err}
	case errors.Is(err, service.ErrTimedOutWaiting):
		return &problem{status: http.StatusGatewayTimeout, code: DeadlineExceeded, field: "timeoutMs", detail: "timeoutMs ran out while the command waited for its shell snapshot capture; it was not started, and the capture goes on", cause: err}
	}
	return &problem{status: http.StatusInternalServerError, code: Internal, detail: "internal error; see the server log for this request id", cause: err}
}

// writeProblem answers with err as an RFC 9457 problem and logs its cause.
func writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	ev := zerolog.Ctx(r.Context()).Warn()
	if p.status >= 500 {
		ev = zerolog.Ctx(r.Context()).Error()
	}
	ev.Err(err).Str("code", string(p.code)).Msg("request failed")

	body := Problem{
		Type:      "https://snapexec.dev/problems/" + string(p.code),
		Title:     http.StatusText(p.status),
		Status:    p.status,
		Code:      p.code,
		RequestId: requestID(r.Context()),
	}
	if p.detail != "" {
		body.Detail = &p.detail
	}
	if p.field != "" {
		body.Field = &p.field
	}
	if p.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.status)
	_ = json.NewEncoder(w).Encode(body)
}

// requestDecodeError is the strict server's hook for a body it cannot decode
// after validation let it through.
func requestDecodeError(w http.ResponseWriter, r *http.Request, err error) {
	if p := bodyReadProblem(err); p != nil {
		writeProblem(w, r, p)
		return
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) && ute.Field != "" {
		// The schema's integer takes 1e3 and 1000.0; Go's integer does not.
		detail := "must be " + ute.Type.String() + ", not " + ute.Value
		if strings.HasPrefix(ute.Value, "number") {
			detail = "must be a whole number written without a fraction or an exponent (1000, not 1e3 or 1000.0)"
		}
		writeProblem(w, r, &problem{status: http.StatusBadRequest, code: InvalidRequest, field: ute.Field, detail: ute.Field + " " + detail, cause: err})
		return
	}
	writeProblem(w, r, &problem{status: http.StatusBadRequest, code: InvalidRequest, detail: "the request body does not match the operation's schema", cause: err})
}

// parameterError is the chi wrapper's hook for a path or query parameter that
// does not bind.
func parameterError(w http.ResponseWriter, r *http.Request, err error) {
	field := ""
	var ipf *InvalidParamFormatError
	var rpe *RequiredParamError
	switch {
	case errors.As(err, &ipf):
		field = ipf.ParamName
	case errors.As(err, &rpe):
		field = rpe.ParamName
	}
	writeProblem(w, r, &problem{status: http.StatusBadRequest, code: InvalidRequest, field: field, detail: "parameter " + field + " is not valid", cause: err})
}

// validationError is the contract validator's hook: the request does not
// match api/openapi.yaml. The validator's own message quotes the whole request
// value, env values included, so neither the client nor the log gets it: only
// the reason and the field.
func validationError(w http.ResponseWriter, r *http.Request, err error) {
	if p := bodyReadProblem(err); p != nil {
		writeProblem(w, r, p)
		return
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// The validator's read of the body: the client went away before
		// its Content-Length, or before a chunked body's last chunk. (A
		// JSON value that ends early is decodeJSONBody's own problem.)
		writeProblem(w, r, &problem{status: http.StatusBadRequest, code: InvalidRequest, field: "body", cause: err,
			detail: "the request body ended before its declared end (Content-Length, or a chunked body's last chunk); nothing was done"})
		return
	}
	var decoded *problem // from decodeJSONBody
	if errors.As(err, &decoded) {
		writeProblem(w, r, decoded)
		return
	}
	p := &problem{status: http.StatusBadRequest, code: InvalidRequest, detail: "the request does not match the contract"}
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		writeProblem(w, r, p)
		return
	}
	if re.Parameter != nil {
		p.field = re.Parameter.Name
		p.detail = "parameter " + re.Parameter.Name + " is not valid"
	}
	var se *openapi3.SchemaError
	switch {
	case re.RequestBody != nil && strings.HasPrefix(re.Reason, "header Content-Type has unexpected value"):
		p.status, p.code, p.field = http.StatusUnsupportedMediaType, UnsupportedMediaType, "Content-Type"
		p.detail = "send the body as JSON, with the header Content-Type: application/json (curl: -H 'Content-Type: application/json')"
	case errors.As(re.Err, &se):
		p.detail = se.Reason
		if strings.HasPrefix(se.Reason, "cannot convert json.Number") {
			p.detail = "the number is out of range" // beyond float64: the validator's words name its types
		}
		if se.SchemaField == "not" && se.Schema != nil && se.Schema.Not != nil && se.Schema.Not.Value != nil {
			// The contract's values excluded, never the client's: the
			// validator gives no reason of its own.
			p.detail = "the value may not be " + excluded(se.Schema.Not.Value.Enum)
		}
		ptr := se.JSONPointer()
		if name, ok := unsupportedProperty(se); ok {
			ptr = append(ptr, name) // the property itself, not the object that has it
		}
		switch {
		case re.Parameter != nil:
			// A parameter's value: the field is the parameter's name.
		case len(ptr) > 0:
			p.field = fieldPath(ptr)
		default:
			p.field = "body"
		}
	case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
		p.detail = "a request body is required"
		if re.Parameter != nil {
			p.detail = "parameter " + re.Parameter.Name + " is required"
		}
	}
	writeProblem(w, r, p)
}

// unsupportedProperty is the name of the property a schema's
// additionalProperties: false refuses (the validator says: property "name"
// is unsupported, of the object's properties).
func unsupportedProperty(se *openapi3.SchemaError) (string, bool) {
	if se.SchemaField != "properties" {
		return "", false
	}
	quoted, ok := strings.CutPrefix(se.Reason, "property ")
	if !ok {
		return "", false
	}
	quoted, ok = strings.CutSuffix(quoted, " is unsupported")
	if !ok {
		return "", false
	}
	name, err := strconv.Unquote(quoted)
	return name, err == nil
}

// renameField is err as the problem the table gives it, its field renamed:
// for an operation whose request names the field otherwise (a prewarm's
// scope is its path's scopeId, not shellSnapshot.scopeId).
func renameField(err error, rename func(field string) string) error {
	p := *problemFor(err)
	p.field = rename(p.field)
	return &p
}

// excluded lists the values of a schema's not, quoted, as a detail says them.
func excluded(values []any) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		b, _ := json.Marshal(v)
		quoted[i] = string(b)
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// fieldPath renders a JSON pointer as a field path such as env["A"] or argv[0].
func fieldPath(ptr []string) string {
	out := ""
	for i, part := range ptr {
		switch {
		case isIndex(part):
			out += "[" + part + "]"
		case i > 0 && (out == "env" || out == "envPolicy.set"):
			out += fmt.Sprintf("[%q]", part)
		case out == "":
			out = part
		default:
			out += "." + part
		}
	}
	return out
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
