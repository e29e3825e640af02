package handlers

import (
	"testing"

	"github.com/snapexec/snapexec/internal/exec"
	"github.com/snapexec/snapexec/internal/service"
)

// TestAttachRefusals: what the attach route answers before any upgrade, as
// problems: not a WebSocket (426), an unknown process (404), a resume point
// that is malformed or never sent (400) or evicted (410), a seqs that is no
// boolean (400). The protocol
// itself runs against a real server in cmd/server's terminal tests.
func TestAttachRefusals(t *testing.T) {
	upgrade := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	attaches := func(err error) func() *fakeService {
		return func() *fakeService {
			return &fakeService{AttachFn: func(id string, _ int64) (*service.Attachment, error) {
				if id != "sh-1" {
					return nil, service.ErrNotFound
				}
				return nil, err
			}}
		}
	}
	runHandlerCases(t, []handlerCase{
		{name: "not an upgrade", method: "GET", target: "/processes/sh-1/attach", svc: attaches(nil), status: 426,
			want: `{"code":"invalid_request","field":"Upgrade"}`},
		{name: "unknown process", method: "GET", target: "/processes/none/attach", header: upgrade, svc: attaches(nil), status: 404,
			calls: []string{"Attach none"}, want: `{"code":"not_found"}`},
		{name: "malformed afterSeq", method: "GET", target: "/processes/sh-1/attach?afterSeq=x", header: upgrade, svc: attaches(nil), status: 400,
			want: `{"code":"invalid_request","field":"afterSeq"}`},
		{name: "negative afterSeq", method: "GET", target: "/processes/sh-1/attach?afterSeq=-1", header: upgrade, svc: attaches(nil), status: 400,
			want: `{"code":"invalid_request","field":"afterSeq"}`},
		{name: "seqs not a boolean", method: "GET", target: "/processes/sh-1/attach?seqs=maybe", header: upgrade, svc: attaches(nil), status: 400,
			want: `{"code":"invalid_request","field":"seqs"}`},
		{name: "seqs empty", method: "GET", target: "/processes/sh-1/attach?seqs=", header: upgrade, svc: attaches(nil), status: 400,
			want: `{"code":"invalid_request","field":"seqs"}`},
		{name: "afterSeq never sent", method: "GET", target: "/processes/sh-1/attach?afterSeq=9", header: upgrade, svc: attaches(exec.ErrSeqAhead), status: 400,
			calls: []string{"Attach sh-1"}, want: `{"code":"invalid_request","field":"afterSeq"}`},
		{name: "afterSeq evicted", method: "GET", target: "/processes/sh-1/attach?afterSeq=1", header: upgrade, svc: attaches(exec.ErrOutputLost), status: 410,
			calls: []string{"Attach sh-1"}, want: `{"code":"output_lost"}`},
	})
}
