package handlers

import (
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// spliceUploadBytes is the smallest declared upload whose body is read
// straight from its connection (uploadBody): below it the copy through
// net/http costs little, and the connection stays open for the next request.
const spliceUploadBytes = 1 << 20

// readAheadBytes is the size of net/http's read-ahead of a connection (its
// bufio.Reader's default): one read of this size from the body takes all
// that net/http had read of it, and leaves the rest on the socket.
const readAheadBytes = 4096

// uploadBody is the body of an upload to give the files package: for an
// HTTP/1.1 upload of a declared length of at least spliceUploadBytes over a
// plain connection, a splicedBody, whose bytes splice(2) moves from the
// socket into the file (files.Splicer) instead of net/http's reads and the
// server's buffers, so that an upload's throughput comes close to cp's
// (docs/SANDBOX.md); else r.Body.
//
// The body keeps the rules of any upload: its declared length is the one
// limitBody checked, each read must come within boundBody's pace, and an
// Expect: 100-continue is answered at the first read, by net/http. net/http
// answers the request as usual, and then closes the connection: its body
// reader never saw the end of the body (boundBody's Connection: close stays).
func uploadBody(r *http.Request) io.Reader {
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.TLS != nil || r.ContentLength < spliceUploadBytes || len(r.TransferEncoding) > 0 {
		return r.Body
	}
	conn := requestConn(r)
	if conn == nil {
		return r.Body
	}
	return &splicedBody{head: r.Body, conn: conn, left: r.ContentLength, pace: uploadPace(r)}
}

// splicedBody is an upload's body: its first bytes come through net/http
// (head), which answers an Expect: 100-continue and hands over what it read
// ahead; the rest is read from the connection, past net/http.
type splicedBody struct {
	head    io.Reader // r.Body, read once
	pending []byte    // of head's read, not yet passed on
	passed  bool      // head was read
	conn    net.Conn
	left    int64 // of the declared length, not yet read from head or conn
	pace    time.Duration
}

// readHead reads, once, what net/http read ahead of the connection.
func (b *splicedBody) readHead() error {
	if b.passed {
		return nil
	}
	b.passed = true
	buf := make([]byte, min(readAheadBytes, b.left))
	n, err := b.head.Read(buf)
	b.pending, b.left = buf[:n], b.left-int64(n)
	if err == io.EOF && b.left > 0 {
		return io.ErrUnexpectedEOF
	}
	if err == io.EOF {
		return nil
	}
	return err
}

// SpliceTo moves at most n bytes of the body into f (files.Splicer): the
// first ones by a copy through net/http, the rest by splice(2).
func (b *splicedBody) SpliceTo(f *os.File, n int64) (int64, error) {
	if err := b.readHead(); err != nil {
		return 0, err
	}
	if len(b.pending) > 0 {
		k, err := f.Write(b.pending[:min(int64(len(b.pending)), n)])
		b.pending = b.pending[k:]
		return int64(k), err
	}
	if b.left == 0 {
		return 0, io.EOF
	}
	n = min(n, b.left)
	if b.pace > 0 {
		_ = b.conn.SetReadDeadline(time.Now().Add(b.pace))
	}
	// os.File.ReadFrom splices from a *net.TCPConn or *net.UnixConn under
	// the io.LimitedReader, and copies from any other.
	k, err := f.ReadFrom(io.LimitReader(b.conn, n))
	b.left -= k
	if err == nil && k < n {
		err = io.ErrUnexpectedEOF // the client closed before the declared end
	}
	return k, err
}

// Read reads the body as any reader would.
func (b *splicedBody) Read(p []byte) (int, error) {
	if err := b.readHead(); err != nil {
		return 0, err
	}
	if len(b.pending) > 0 {
		n := copy(p, b.pending)
		b.pending = b.pending[n:]
		return n, nil
	}
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.pace > 0 {
		_ = b.conn.SetReadDeadline(time.Now().Add(b.pace))
	}
	n, err := b.conn.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
