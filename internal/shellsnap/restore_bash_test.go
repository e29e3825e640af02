package shellsnap

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDeclareListingMatchesParse: declareStatements splits what bash's own
// declare -p prints as statements (a full parse) does, and declareValue
// reads each exported scalar's value as bash exports it (env -0 of the same
// shell), for values of every byte, quotes, backslashes, expansions,
// newlines, invalid UTF-8, in arrays and associative arrays (their keys
// too), with attributes, under the C and a UTF-8 locale.
func TestDeclareListingMatchesParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	values := []string{"", " ", `\`, `a\`, `"`, `'`, `$x`, "`x`", `$(x)`, "a\nb", "\t", "é", "\xff\xfe", `\"\\$`, "a b  c", "x=y", "#", "!", "*", "[", "]", "@", "(", ")", ";", "&", "|", "<", ">", "\x7f", "\x1b[0m"}
	for c := 1; c < 256; c++ {
		values = append(values, string([]byte{byte(c)}))
	}
	for range 60 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = byte(1 + rng.IntN(255))
		}
		values = append(values, string(b))
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "N": fmt.Sprint(len(values))}
	for i, v := range values {
		env[fmt.Sprintf("V_%d", i)] = v
	}
	// Each value exported as it came, and as an unexported scalar, an
	// array's element, an associative array's key and value, an integer's
	// text where it is one, and through an unexported nameref.
	script := `for ((i = 0; i < N; i++)); do
  n=V_$i
  declare -- "u_$i=${!n}"
  declare -a "a_$i=()"; declare -n ref=a_$i; ref=("${!n}" "${!n}x"); unset -n ref
  if [[ -n ${!n} ]]; then declare -A "h_$i=()"; declare -n ref=h_$i; ref[${!n}]=${!n}; unset -n ref; fi
done
declare -ix INT=42; declare -rx RO=$V_3; declare -lx LOW=ABC; declare -x NOVALUE; declare -n NREF=V_1
declare -p; printf '\0'; /usr/bin/env -0; :`
	for _, locale := range []string{"C", "C.UTF-8"} {
		t.Run(locale, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-c", script)
			e := envPairs(env)
			cmd.Env = append(e, "LC_ALL="+locale)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			listing, environ, _ := bytes.Cut(out, []byte{0})
			text := strings.TrimSuffix(string(listing), "\n")
			got, ok := declareStatements(text)
			if !ok || strings.Join(got, "\n") != text {
				t.Fatalf("declareStatements() = %d statements, %v; want the listing's lines", len(got), ok)
			}
			// Where the full parse reads a line (it refuses an associative
			// array's key such as [%] or [.]), it reads one statement, the same.
			for _, stmt := range got {
				if want := statements(stmt); want != nil && !reflect.DeepEqual(want, []string{stmt}) {
					t.Errorf("declareStatements() gives %q; statements() %q", stmt, want)
				}
			}
			// And bash reads each back as what it printed.
			var back strings.Builder
			for _, stmt := range got {
				if _, name, _, _ := declareHead(stmt); strings.HasPrefix(name, "u_") || strings.HasPrefix(name, "a_") || strings.HasPrefix(name, "h_") {
					fmt.Fprintf(&back, "%s\n", stmt)
				}
			}
			back.WriteString("declare -p ${!u_*} ${!a_*} ${!h_*}")
			again := exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-c", back.String())
			again.Env = append(envPairs(map[string]string{"PATH": "/usr/bin:/bin"}), "LC_ALL="+locale)
			reread, err := again.Output()
			if err != nil {
				t.Fatalf("bash reading the statements back: %v", err)
			}
			var mine []string
			for _, stmt := range got {
				if _, name, _, _ := declareHead(stmt); strings.HasPrefix(name, "u_") || strings.HasPrefix(name, "a_") || strings.HasPrefix(name, "h_") {
					mine = append(mine, stmt)
				}
			}
			lines := strings.Split(strings.TrimSuffix(string(reread), "\n"), "\n")
			slices.Sort(lines)
			slices.Sort(mine)
			if !reflect.DeepEqual(lines, mine) {
				t.Fatalf("bash reads the statements back as %d others", len(lines))
			}
			exported := map[string]string{}
			for _, stmt := range got {
				flags, name, at, ok := declareHead(stmt)
				if !ok {
					t.Fatalf("declareHead(%q) not ok", stmt)
				}
				if !strings.Contains(flags, "x") || strings.ContainsAny(flags, "aAn") || at < 0 {
					continue
				}
				if exported[name], ok = declareValue(stmt); !ok {
					t.Fatalf("declareValue(%q) not ok", stmt)
				}
			}
			want := exportsOf(append([]byte{0}, environ...))
			delete(want, "_") // env's own path
			if !reflect.DeepEqual(exported, want) {
				for name, v := range want {
					if exported[name] != v {
						t.Errorf("%s: declare -p gives %q, env %q", name, exported[name], v)
					}
				}
				t.Fatalf("the exported values of declare -p differ from env -0's (%d against %d names)", len(exported), len(want))
			}
		})
	}
}

// TestDeclareListingRefusesTheUnusual: what bash's declare -p never prints
// is left to the full parse.
func TestDeclareListingRefusesTheUnusual(t *testing.T) {
	for name, text := range map[string]string{
		"not a declare":      "declare -- a=\"1\"\nx=1",
		"a second statement": `declare -- a="1"; rm -rf /`,
		"an open quote":      `declare -- a="1`,
		"an open $'":         `declare -- a=$'1`,
		"an expansion":       `declare -- a="$(x)"`,
		"unquoted expansion": `declare -- a=$x`,
		"a comment":          `declare -- a="1" #`,
		"a backquote":        "declare -- a=\"`x`\"",
	} {
		if stmts, ok := declareStatements(text); ok {
			t.Errorf("%s: declareStatements(%q) = %q, ok; want not ok", name, text, stmts)
		}
	}
	for _, stmt := range []string{`declare -x a="1`, `declare -x a="1"x`, `declare -x a=$'1`, `declare -x a=1`, `declare -x a="\"`, `declare -x a`} {
		if v, ok := declareValue(stmt); ok {
			t.Errorf("declareValue(%q) = %q, ok; want not ok", stmt, v)
		}
	}
}
