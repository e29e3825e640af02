// Package client is the Go client of snapexec.
//
// The contract's types and one low-level call per operation are generated
// from api/openapi.yaml (api.gen.go), so client and server cannot drift
// apart. [Client] embeds the generated [ClientWithResponses]: every operation
// is there as its XxxWithResponse method, and [Result] (or [Check], for an
// answer without a value) turns such an answer into its value or an [*Error]. By hand, for what generation does not give:
// [WithToken] (bearer auth), [Client.Exec] (the JSON answer),
// [Client.ExecStream] and [Client.Events] (a process's output as it comes,
// resumed by seq after a dropped connection), [Client.Attach] (a terminal:
// its output as an io.Reader, stdin as an io.Writer, resize, resumed
// likewise), [Client.Resize], [Client.Start], the typed
// [*Error] of every problem+json answer, and the output helpers
// [ExecResult.StdoutData], [ExecResult.StderrData] and [OutputChunk.Bytes].
//
// # Dropped connections
//
// A [Stream] and an [Attachment] redial a connection that drops, and go on
// after the last output delivered: at once, then waiting 100 ms, doubling up
// to 2 s, for as long as connections break before bringing any output. A
// connection that opens and breaks again only makes the next redial wait;
// five redials in a row that cannot connect (no connection, no handshake, a
// proxy's 502, 503 or 504 without a problem code) end the stream, its Next or
// Read returning the last one's error. The server's problem answer on
// redialling (an [*Error] with a Code, such as not_found once the server has
// forgotten the process) ends it at once. A server that accepts and drops
// every connection is redialled every 2 s for as long as the context lasts:
// bound it there.
//
// # Reaching a server over a Unix domain socket
//
// A server that listens on a socket path rather than a TCP address is
// reached with an http.Client that dials the socket whatever the URL's host,
// given with the generated [WithHTTPClient], and a loopback URL, whose host
// the server's Host check accepts:
//
//	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
//		return new(net.Dialer).DialContext(ctx, "unix", "/run/snapexec.sock")
//	}
//	c, err := client.New("http://localhost",
//		client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: dial}}))
//
// The same option carries any other transport: TLS settings, a proxy,
// tracing. Attach dials its WebSocket with that http.Client too.
package client
