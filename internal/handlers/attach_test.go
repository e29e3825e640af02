package handlers

import (
	"context"
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
)

// TestAttachRefusals: what the attach route answers before any upgrade, as
// problems: not a WebSocket (426), an unknown process (404), a resume point
// that is malformed or never sent (400) or evicted (410). The protocol
// itself runs against a real server in cmd/server's terminal tests.
func TestAttachRefusals(t *testing.T) {
	upgrade := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	reads := func(err error) func() *fakeService {
		return func() *fakeService {
			return &fakeService{ReadFn: func(_ context.Context, id string, _ service.ReadInput) (exec.ReadResult, error) {
				if id != "sh-1" {
					return exec.ReadResult{}, service.ErrNotFound
				}
				return exec.ReadResult{NextSeq: 5}, err
			}}
		}
	}
	runHandlerCases(t, []handlerCase{
		{name: "not an upgrade", method: "GET", target: "/processes/sh-1/attach", svc: reads(nil), status: 426,
			want: `{"code":"invalid_request","field":"Upgrade"}`},
		{name: "unknown process", method: "GET", target: "/processes/none/attach", header: upgrade, svc: reads(nil), status: 404,
			calls: []string{"Read none"}, want: `{"code":"not_found"}`},
		{name: "malformed afterSeq", method: "GET", target: "/processes/sh-1/attach?afterSeq=x", header: upgrade, svc: reads(nil), status: 400,
			want: `{"code":"invalid_request","field":"afterSeq"}`},
		{name: "afterSeq never sent", method: "GET", target: "/processes/sh-1/attach?afterSeq=9", header: upgrade, svc: reads(exec.ErrSeqAhead), status: 400,
			calls: []string{"Read sh-1"}, want: `{"code":"invalid_request","field":"afterSeq"}`},
		{name: "afterSeq evicted", method: "GET", target: "/processes/sh-1/attach?afterSeq=1", header: upgrade, svc: reads(exec.ErrOutputLost), status: 410,
			calls: []string{"Read sh-1"}, want: `{"code":"output_lost"}`},
	})
}
