package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// decodeJSONBody is the contract validator's decoder of application/json
// bodies. It adds the two checks a JSON decoder does not make to the one
// decode the validator needs anyway, so that they run once, on the routes that
// take a body, and cost no pass of their own over it: the body is UTF-8
// (decoders turn invalid UTF-8 into U+FFFD silently, so that a name or an argv
// would not be what the client sent), and it is one JSON value (a decoder stops
// after the first, so that "{...} junk" would pass as "{...}").
func decodeJSONBody(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, body); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if !utf8.Valid(data) {
		return nil, invalid("body", "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // as the validator's own decoder: integers stay exact
	var value any
	if err := dec.Decode(&value); err != nil {
		return nil, jsonSyntaxProblem(err)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, invalidf("body", "the request body is not one JSON value: more follows at byte %d", len(data)-len(rest))
	}
	return value, nil
}

// jsonSyntaxProblem says where the body stops being JSON, and never quotes it:
// the body may hold env values.
func jsonSyntaxProblem(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return invalidf("body", "the request body is not valid JSON (at byte %d)", se.Offset)
	case errors.Is(err, io.EOF):
		return invalid("body", "the request body holds no JSON value")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("body", "the request body ends inside its JSON value")
	}
	return invalid("body", "the request body is not valid JSON")
}
