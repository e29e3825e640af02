package handlers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-json-experiment/json/jsontext"
)

// decodeJSONBody is the contract validator's decoder of application/json
// bodies. Before the one decode the validator needs anyway, so that they run
// once, on the routes that take a body, it makes the checks a JSON decoder
// does not: the body is one I-JSON value (RFC 7493), in one pass that
// allocates nothing (jsontext.Value.IsValid). So it is UTF-8, and no string
// escapes half a surrogate pair (decoders turn either into U+FFFD silently,
// so that a name or an argv would not be what the client sent); it is one
// value (a decoder stops after the first, so that "{...} junk" would pass as
// "{...}"); and no object names a member twice (a decoder keeps the last,
// another reader may keep the first: a proxy that checked one argv would
// pass another to run). bodyProblem says which. A string the contract
// gives as format byte must be base64 as the generated server decodes it
// (checkBase64). A Content-Type naming a charset other than utf-8 is 415
// before the body is read: JSON is UTF-8 (RFC 8259, 8.1), and a body the
// client encoded otherwise would be read as what it is not.
func decodeJSONBody(body io.Reader, header http.Header, schema *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	if _, params, err := mime.ParseMediaType(header.Get("Content-Type")); err == nil {
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return nil, &problem{status: http.StatusUnsupportedMediaType, code: UnsupportedMediaType, field: "Content-Type",
				detail: "JSON is UTF-8: send it with Content-Type: application/json, or with charset=utf-8"}
		}
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, body); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if !jsontext.Value(data).IsValid() {
		return nil, bodyProblem(data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // as the validator's own decoder: integers stay exact
	var value any
	if err := dec.Decode(&value); err != nil {
		return nil, jsonSyntaxProblem(err)
	}
	if err := checkBase64(value, schema, nil); err != nil {
		return nil, err
	}
	return value, nil
}

// checkBase64 refuses a string of v (the body, as schema describes it)
// whose schema is of format byte and which is not base64 as the generated
// server decodes it (encoding/json: RFC 4648's standard alphabet, padded).
// The validator's pattern for the format lets "YQ" and the URL alphabet's
// "-_" through, and the decode that then refuses them says neither which
// field nor why. path is the JSON pointer of v.
func checkBase64(v any, schema *openapi3.SchemaRef, path []string) error {
	if schema == nil || schema.Value == nil {
		return nil
	}
	s := schema.Value
	for _, sub := range s.AllOf {
		if err := checkBase64(v, sub, path); err != nil {
			return err
		}
	}
	switch v := v.(type) {
	case string:
		if s.Format != "byte" {
			return nil
		}
		if _, err := base64.StdEncoding.DecodeString(v); err != nil {
			field := fieldPath(path)
			if field == "" {
				field = "body"
			}
			return invalidf(field, "%s is not base64: RFC 4648's standard alphabet (A-Z a-z 0-9 + /), padded with = to a multiple of 4 characters", field)
		}
	case map[string]any:
		for _, name := range slices.Sorted(maps.Keys(v)) {
			sub := s.Properties[name]
			if sub == nil {
				sub = s.AdditionalProperties.Schema
			}
			if err := checkBase64(v[name], sub, append(path, name)); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := checkBase64(item, s.Items, append(path, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// bodyProblem says why data, which is not one I-JSON value, is refused. It
// quotes a member's name at most, never a value: a value may be a secret.
func bodyProblem(data []byte) error {
	if !utf8.Valid(data) {
		return invalid("body", "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var value any
	if err := dec.Decode(&value); err != nil {
		return jsonSyntaxProblem(err)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return invalidf("body", "the request body is not one JSON value: more follows at byte %d", len(data)-len(rest))
	}
	_, err := jsontext.NewDecoder(bytes.NewReader(data)).ReadValue()
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		if se.Err == jsontext.ErrDuplicateName {
			return invalidf("body", "the request body names a member twice in one object: %s (a JSON pointer)", short(string(se.JSONPointer)))
		}
		return invalidf("body", "the request body has a string that is not Unicode text, such as an escaped half of a surrogate pair, at byte %d", se.ByteOffset)
	}
	return invalid("body", "the request body is not valid JSON")
}

// short is s cut to 100 bytes, for a problem's detail.
func short(s string) string {
	if len(s) <= 100 {
		return s
	}
	return strings.ToValidUTF8(s[:100], "") + "..."
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
