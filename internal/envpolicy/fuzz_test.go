package envpolicy

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzApply checks Apply against the rules of each step, one name at a time. vars
// and set are "NAME:VALUE;NAME:VALUE" lists, with '=' removed from the names as a
// real environment would have them; exclude and includeOnly are ';'-separated
// pattern lists.
func FuzzApply(f *testing.F) {
	f.Fuzz(func(t *testing.T, varList, setList, excludeList, includeList string, inherit uint8, ignoreDefaults bool) {
		vars := fuzzVars(varList)
		p := Policy{
			Inherit:               [...]Inherit{"", InheritAll, InheritCore, InheritNone}[inherit%4],
			IgnoreDefaultExcludes: ignoreDefaults,
			Exclude:               fuzzPatterns(excludeList),
			Set:                   fuzzVars(setList),
			IncludeOnly:           fuzzPatterns(includeList),
		}
		wantVars, wantSet := maps.Clone(vars), maps.Clone(p.Set)

		out := Apply(p, vars)

		if !maps.Equal(vars, wantVars) || !maps.Equal(p.Set, wantSet) {
			t.Fatalf("Apply(%+v, %v) modified its inputs", p, wantVars)
		}
		for name := range keysOf(vars, p.Set, out) {
			got, kept := out[name]
			want, wantKept := fuzzExpect(p, vars, name)
			if kept != wantKept || got != want {
				t.Errorf("Apply(%+v, %v)[%q] = %q, %v, want %q, %v", p, vars, name, got, kept, want, wantKept)
			}
			if kept && strings.Contains(name, "=") {
				t.Errorf("Apply(%+v, %v) has name %q with '='", p, vars, name)
			}
		}
	})
}

// fuzzExpect says, rule by rule, whether name survives p and with which value.
func fuzzExpect(p Policy, vars map[string]string, name string) (string, bool) {
	if IsNeverInherited(name) {
		return "", false
	}
	if len(p.IncludeOnly) > 0 && !slices.ContainsFunc(p.IncludeOnly, matches(name)) {
		return "", false
	}
	// Set wins over every earlier step: excludes never see its names.
	if value, ok := p.Set[name]; ok {
		return value, true
	}
	value, ok := vars[name]
	if !ok {
		return "", false
	}
	switch p.Inherit {
	case InheritNone:
		return "", false
	case InheritCore:
		core := []string{"PATH", "SHELL", "TMPDIR", "TEMP", "TMP", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "USER"}
		if !slices.Contains(core, asciiUpper(name)) {
			return "", false
		}
	}
	if !p.IgnoreDefaultExcludes && slices.ContainsFunc([]string{"*KEY*", "*SECRET*", "*TOKEN*"}, matches(name)) {
		return "", false
	}
	if slices.ContainsFunc(p.Exclude, matches(name)) {
		return "", false
	}
	return value, true
}

func matches(name string) func(pattern string) bool {
	return func(pattern string) bool { return Match(pattern, name) }
}

func fuzzVars(list string) map[string]string {
	vars := make(map[string]string)
	if list == "" {
		return vars
	}
	for _, pair := range strings.Split(list, ";") {
		name, value, _ := strings.Cut(pair, ":")
		vars[strings.ReplaceAll(name, "=", "")] = value
	}
	return vars
}

func fuzzPatterns(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ";")
}

// keysOf returns the union of the maps' names.
func keysOf(ms ...map[string]string) map[string]bool {
	keys := make(map[string]bool)
	for _, m := range ms {
		for name := range m {
			keys[name] = true
		}
	}
	return keys
}

// FuzzMatch compares Match with a regexp built from the pattern, on ASCII
// upper-cased copies of both, since Match folds ASCII letters only and regexp's (?i)
// would fold Unicode too.
func FuzzMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"*", ""},
		{"*KEY*", "monkey"},
		{"?", "é"},
		{"??", "é"},
		{"a*b?c", "AxxBxC"},
		{"*a*a*b", "aaaaaaaaaaaaaaaaaaaa"},
		{"PROFILE_*", "PROFILE_ALLOWED"},
		{"[.+]", "[.+]"},
		{"", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			t.Skip("regexp needs valid UTF-8; the snapshot parser drops invalid names")
		}
		var expr strings.Builder
		expr.WriteString(`(?s)^`)
		for _, r := range asciiUpper(pattern) {
			switch r {
			case '*':
				expr.WriteString(`.*`)
			case '?':
				expr.WriteString(`.`)
			default:
				expr.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		expr.WriteString(`$`)
		re, err := regexp.Compile(expr.String())
		if err != nil {
			t.Fatalf("regexp.Compile(%q): %v", expr.String(), err)
		}
		if got, want := Match(pattern, name), re.MatchString(asciiUpper(name)); got != want {
			t.Errorf("Match(%q, %q) = %v, want %v (regexp %s)", pattern, name, got, want, re)
		}
	})
}

// asciiUpper upper-cases the ASCII letters of s only.
func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}
