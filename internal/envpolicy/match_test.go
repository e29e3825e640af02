package envpolicy

import (
	"strings"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		target  string
		want    bool
	}{
		{"exact", "PATH", "PATH", true},
		{"exact mismatch", "PATH", "HOME", false},
		{"anchored at end", "PATH", "PATHS", false},
		{"anchored at start", "PATH", "XPATH", false},
		{"case-insensitive", "path", "PATH", true},
		{"case-insensitive mixed", "Profile_*", "pROFILE_allowed", true},
		{"no Unicode folding", "é", "É", false},
		{"kelvin sign is not k", "k", "\u212a", false},
		{"empty pattern empty name", "", "", true},
		{"empty pattern", "", "A", false},
		{"empty name", "A", "", false},
		{"star matches empty", "*", "", true},
		{"star matches all", "*", "EXAMPLE_ENV", true},
		{"stars collapse", "***", "123456", true},
		{"star in middle matches empty", "A*B", "AB", true},
		{"star in middle", "A*B", "AxyzB", true},
		{"star in middle wrong end", "A*B", "AxyzBC", false},
		{"prefix star", "TEST_*", "TEST_A_LONG_NAME", true},
		{"prefix star needs prefix", "TEST_*", "TEST", false},
		{"suffix star", "*_TEST", "A_TEST", true},
		{"suffix star wrong end", "*_TEST", "A_TESTING", false},
		{"contains", "*KEY*", "MONKEY_BUSINESS", true},
		{"contains at both ends", "*KEY*", "KEY", true},
		{"contains missing", "*KEY*", "KY", false},
		{"multiple stars in order", "*a*b*c*", "xaybzc", true},
		{"multiple stars out of order", "*a*b*c*", "cba", false},
		{"backtrack past partial match", "*aab", "aaab", true},
		{"backtrack to last star", "da*da*da*", "daaadabadmanda", true},
		{"question one", "?", "A", true},
		{"question not empty", "?", "", false},
		{"question not two", "?", "AB", false},
		{"question inside", "EXAMPLE_?_ENV", "EXAMPLE_A_ENV", true},
		{"question inside needs one", "EXAMPLE_?_ENV", "EXAMPLE__ENV", false},
		{"question then star", "?*", "", false},
		{"star then question", "*?", "A", true},
		{"star question star", "*?*", "", false},
		{"question is one rune", "?", "é", true},
		{"question is one CJK rune", "?", "日", true},
		{"two questions one rune", "??", "é", false},
		{"questions around rune", "a?b", "a日b", true},
		{"star before rune", "*本", "日本", true},
		{"literal star in name", "a*b", "a*xb", true},
		{"literal question in name", "?", "?", true},
		{"no escapes", `\*`, "*", false},
		{"no classes", "[AB]", "A", false},
		{"brackets are literal", "[AB]", "[ab]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match(tt.pattern, tt.target); got != tt.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.target, got, tt.want)
			}
		})
	}
}

// TestMatchPathological checks that a pattern which makes a backtracking matcher
// take exponential time finishes at once.
func TestMatchPathological(t *testing.T) {
	pattern, name := "*a*a*a*a*a*b", strings.Repeat("a", 10_000)
	start := time.Now()
	got := Match(pattern, name)
	if got {
		t.Errorf("Match(%q, 10000×a) = true, want false", pattern)
	}
	// Linear work here takes microseconds; the bound only catches blow-ups.
	if d := time.Since(start); d > time.Second {
		t.Errorf("Match(%q, 10000×a) took %v, want well under a second", pattern, d)
	}
}
