package shellsnap

import (
	"bytes"
	"regexp"
	"strings"
)

// A fake capture answers a capture command as the capture scripts
// (script_bash.go, script_zsh.go, script_sh.go) would: "# Snapshot file",
// the records under the nonce of the command, the end record, a NUL and the
// environment as env -0 prints it (records.go).

// testNonce is the nonce of the tests' own capture output.
const testNonce = "0123456789abcdef0123456789abcdef"

// nonceLine is the line of every capture script that holds its nonce.
var nonceLine = regexp.MustCompile(`(?m)^__snapexec_n=([0-9a-f]+)$`)

// captureNonce is the nonce of the capture command argv, and "" for any
// other command (a validation, say).
func captureNonce(argv []string) string {
	if m := nonceLine.FindStringSubmatch(strings.Join(argv, "\n")); m != nil {
		return m[1]
	}
	return ""
}

// captureOutput is what a capture of shell prints under nonce: noise
// before the marker, the records in order, and env ("NAME=VALUE" pieces, in
// that order). A record's name is printed quoted, as printf %q would.
func captureOutput(nonce, shell, noise string, recs []record, env ...string) []byte {
	var b bytes.Buffer
	b.WriteString(noise)
	b.WriteString(StateMarker + "\n" + nonce + " begin " + shell + "\n\n")
	for _, r := range recs {
		b.WriteString(nonce + " " + r.kind)
		if r.name != "" {
			b.WriteString(" " + quote(r.name))
		}
		b.WriteString("\n" + r.payload + "\n")
	}
	b.WriteString(nonce + " end\n\n")
	b.WriteByte(0)
	for _, kv := range env {
		b.WriteString(kv)
		b.WriteByte(0)
	}
	return b.Bytes()
}
