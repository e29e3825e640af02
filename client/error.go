package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Error is an answer other than a success. When the server sent its
// problem+json document, every field is the problem's; an answer from
// something else on the way (a proxy's 502) has only Status, Title and a
// Detail taken from its body.
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == client.ProblemCodeNotFound { ... }
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the problem's stable machine-readable code, such as
	// not_found or invalid_request; empty when the answer was no problem.
	Code ProblemCode
	// Title is the status's text.
	Title string
	// Detail says what went wrong, for a person.
	Detail string
	// Field is the request field at fault, when there was one.
	Field string
	// RequestID names the request in the server's log.
	RequestID string
	// Type is the URI naming the problem type.
	Type string
}

// Error reads "snapexec: CODE (STATUS): DETAIL", then the field and the
// request id when the problem has them.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("snapexec: ")
	if e.Code != "" {
		fmt.Fprintf(&b, "%s (%d)", e.Code, e.Status)
	} else {
		fmt.Fprintf(&b, "%d %s", e.Status, e.Title)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Field != "" {
		b.WriteString("; field " + e.Field)
	}
	if e.RequestID != "" {
		b.WriteString("; request " + e.RequestID)
	}
	return b.String()
}

// errorFrom reads a failed answer's body: a problem document when it is one.
func errorFrom(status int, body []byte) *Error {
	e := &Error{Status: status, Title: http.StatusText(status)}
	var p Problem
	if err := json.Unmarshal(body, &p); err == nil && p.Code != "" {
		e.Code, e.Type, e.RequestID = p.Code, p.Type, p.RequestId
		if p.Title != "" {
			e.Title = p.Title
		}
		if p.Detail != nil {
			e.Detail = *p.Detail
		}
		if p.Field != nil {
			e.Field = *p.Field
		}
		return e
	}
	e.Detail = snippet(body)
	return e
}

// snippet is the start of a body that is no problem document, for a
// person to recognise (an HTML error page, a proxy's text).
func snippet(body []byte) string {
	const limit = 200
	s := strings.TrimSpace(string(body))
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%d bytes that are not text", len(body))
	}
	if len(s) > limit {
		s = s[:limit]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return s
}
