package envpolicy

import "unicode/utf8"

// Match reports whether name matches the wildcard pattern as a whole: '*' matches
// any run of characters, including an empty one, and '?' matches exactly one
// character (a rune, not a byte). There are no escapes and no character classes.
// Letters are compared ASCII case-insensitively, as the reference's
// to_ascii_lowercase does, so 'é' does not match 'É'
// (docs/design/envpolicy.md#patterns).
//
// The greedy two-pointer algorithm backtracks only to the last '*', so the cost is
// at most len(pattern)*len(name), never exponential.
func Match(pattern, name string) bool {
	p, n := 0, 0
	star, starN := -1, 0 // the last '*' seen in pattern and where in name it began
	for n < len(name) {
		nr, nw := utf8.DecodeRuneInString(name[n:])
		if p < len(pattern) {
			pr, pw := utf8.DecodeRuneInString(pattern[p:])
			if pr == '*' {
				star, starN = p, n
				p += pw
				continue
			}
			if pr == '?' || lowerASCII(pr) == lowerASCII(nr) {
				p += pw
				n += nw
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Mismatch: let the last '*' absorb one more rune and retry after it.
		_, w := utf8.DecodeRuneInString(name[starN:])
		starN += w
		p, n = star+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchAny reports whether name matches one of patterns.
func matchAny(patterns []string, name string) bool {
	for _, pattern := range patterns {
		if Match(pattern, name) {
			return true
		}
	}
	return false
}

func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// equalFoldASCII reports whether a and b are equal under ASCII case folding.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lowerASCII(rune(a[i])) != lowerASCII(rune(b[i])) {
			return false
		}
	}
	return true
}
