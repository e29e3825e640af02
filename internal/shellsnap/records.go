package shellsnap

import (
	"bytes"
	"strconv"
	"strings"
)

// A capture of this server's scripts prints its state as records after the
// line "# Snapshot file": each record is a header line, "NONCE KIND" or
// "NONCE KIND NAME" with NAME quoted as printf %q quotes it, followed by the
// payload, the shell's own output (declare -f, trap -p, a value), and one
// newline. NONCE is a random token chosen for the capture, so no payload can
// end a record early by accident; the payloads are passed on as the shell
// printed them, bytes and all, so a value that is not UTF-8 survives.

// record is one record of a capture.
type record struct {
	kind, name, payload string
}

// splitRecords cuts state, the text after "# Snapshot file\n", into its
// records. Text before the first header is ignored. ok is false when the
// state has no "NONCE begin" record or no "NONCE end" record after it.
func splitRecords(state []byte, nonce string) (records []record, ok bool) {
	prefix := []byte(nonce + " ")
	var cur *record
	var body []byte
	begun := false
	for len(state) > 0 {
		line, rest, found := bytes.Cut(state, []byte{'\n'})
		if !found {
			rest = nil
		}
		if head, isHeader := bytes.CutPrefix(line, prefix); isHeader {
			if cur != nil {
				cur.payload = string(bytes.TrimSuffix(body, []byte{'\n'}))
				records = append(records, *cur)
			}
			kind, quoted, _ := strings.Cut(string(head), " ")
			name, _ := unquoteWord(quoted)
			switch kind {
			case "begin":
				begun, records, cur = true, nil, nil
				state = rest
				continue
			case "end":
				return records, begun
			}
			cur, body = &record{kind: kind, name: name}, nil
		} else if cur != nil {
			body = append(body, line...)
			if found {
				body = append(body, '\n')
			}
		}
		state = rest
	}
	return nil, false
}

// unquoteWord undoes printf %q (bash's, and coreutils' when a profile
// disabled the builtin): backslash escapes, '...', $'...' and plain text,
// in any sequence. ok is false for text %q never prints (an unclosed quote).
func unquoteWord(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i += 2
		case s[i] == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return b.String(), false
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 2
		case strings.HasPrefix(s[i:], "$'"):
			n, ok := ansiC(&b, s[i+2:])
			if !ok {
				return b.String(), false
			}
			i += 2 + n
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), true
}

// ansiC decodes the body of a $'...' word up to its closing quote into b and
// returns how many bytes of s it read, the quote included.
func ansiC(b *strings.Builder, s string) (int, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'':
			return i + 1, true
		case c != '\\' || i+1 == len(s):
			b.WriteByte(c)
			i++
			continue
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i - 1
			for j < len(s) && j < i+2 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i-1:j], 8, 16)
			b.WriteByte(byte(v))
			i = j
		case 'x':
			j := i
			for j < len(s) && j < i+2 && isHex(s[j]) {
				j++
			}
			if j == i {
				b.WriteString(`\x`)
				continue
			}
			v, _ := strconv.ParseUint(s[i:j], 16, 8)
			b.WriteByte(byte(v))
			i = j
		default:
			// \\, \', \" and \? stand for the character; bash keeps the
			// backslash of any other.
			if e != '\\' && e != '\'' && e != '"' && e != '?' {
				b.WriteByte('\\')
			}
			b.WriteByte(e)
		}
	}
	return len(s), false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
