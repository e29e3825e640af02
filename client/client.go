package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
)

// Client calls a snapexec server. It is safe for concurrent use.
//
// The embedded ClientWithResponses has every operation of the contract as
// an XxxWithResponse method; Exec, ExecStream, Start and Events are the
// calls written by hand (Exec hides the generated low-level one of the
// same name, which stays reachable as ClientInterface.Exec).
type Client struct {
	*ClientWithResponses
	// api is the generated caller underneath: Attach dials with its HTTP
	// client and request editors.
	api *APIClient
}

// New returns a client of the server at baseURL (such as
// http://127.0.0.1:8080). The options are the generated ones
// ([WithHTTPClient], [WithRequestEditorFn], [WithBaseURL]) and [WithToken].
func New(baseURL string, opts ...ClientOption) (*Client, error) {
	api, err := NewClient(baseURL, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ClientWithResponses: &ClientWithResponses{ClientInterface: api}, api: api}, nil
}

// WithToken sends token as "Authorization: Bearer <token>" on every
// request. The token is kept only in the request editor: no error, log
// line or String method of this package shows it.
func WithToken(token string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// accept asks for one media type: /exec answers JSON or an event stream
// by the request's Accept.
func accept(mediaType string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Accept", mediaType)
		return nil
	}
}

// answer is what every generated XxxWithResponse returns.
type answer[T any] interface {
	StatusCode() int
	GetBody() []byte
	GetJSON200() *T
}

// Result returns the value of a generated call's 200 answer:
//
//	procs, err := client.Result(c.ListProcessesWithResponse(ctx))
//
// Any other status is an *Error carrying the server's problem; a call
// that failed returns its err.
func Result[T any](r answer[T], err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	if r.StatusCode() != http.StatusOK {
		return nil, errorFrom(r.StatusCode(), r.GetBody())
	}
	if v := r.GetJSON200(); v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("snapexec: the 200 answer is not JSON: %q", snippet(r.GetBody()))
}

// Check returns nil for a generated call's 2xx answer, else the *Error it
// carries, or err when the call failed: Result for answers without a value,
// such as forgetSnapshots' 204.
func Check(r interface {
	StatusCode() int
	GetBody() []byte
}, err error) error {
	if err != nil {
		return err
	}
	if s := r.StatusCode(); s < 200 || s > 299 {
		return errorFrom(s, r.GetBody())
	}
	return nil
}

// Exec runs a command to completion and returns its ending and output.
// The answer is 200 whenever the program started, whatever its exit: a
// non-zero exit is in the result, not an error.
func (c *Client) Exec(ctx context.Context, req ExecRequest) (*ExecResult, error) {
	return Result(c.ExecWithResponse(ctx, req, accept("application/json")))
}

// Start starts a background process and returns it as it is at once
// (running, or already ended).
func (c *Client) Start(ctx context.Context, req StartProcessRequest) (*Process, error) {
	r, err := c.StartProcessWithResponse(ctx, req)
	if err != nil {
		return nil, err
	}
	return created(r.StatusCode(), r.Body, r.JSON201)
}

// NewSession creates a shell session and returns it.
func (c *Client) NewSession(ctx context.Context, req SessionCreateRequest) (*Session, error) {
	r, err := c.CreateSessionWithResponse(ctx, req)
	if err != nil {
		return nil, err
	}
	return created(r.StatusCode(), r.Body, r.JSON201)
}

// ForkSession creates a session that starts from the state session id has
// now, and returns it.
func (c *Client) ForkSession(ctx context.Context, id string, req SessionForkRequest) (*Session, error) {
	r, err := c.ForkSessionWithResponse(ctx, id, req)
	if err != nil {
		return nil, err
	}
	return created(r.StatusCode(), r.Body, r.JSON201)
}

// SessionExec runs script in session id's state and returns its ending, as
// Exec does, with the session's state after it.
func (c *Client) SessionExec(ctx context.Context, id string, req SessionExecRequest) (*SessionExecResult, error) {
	return Result(c.SessionExecWithResponse(ctx, id, req, accept("application/json")))
}

// created is the value of a 201 answer, or the *Error of any other.
func created[T any](status int, body []byte, v *T) (*T, error) {
	if status != http.StatusCreated {
		return nil, errorFrom(status, body)
	}
	if v == nil {
		return nil, fmt.Errorf("snapexec: the 201 answer is not JSON: %q", snippet(body))
	}
	return v, nil
}

// newProcessID names a streamed command that the caller did not name, so
// that its stream can be resumed at /processes/{processId}/events.
func newProcessID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "exec-" + hex.EncodeToString(b)
}
