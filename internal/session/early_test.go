package session

import (
	"strings"
	"testing"
)

// TestEndReadsTheStateTheShellLeftLast runs commands whose dump's file is
// written again after a first complete dump (DumpWatch.Dumped) and before
// the shell's end: the session must take what the files hold at the end,
// as reading them after the exit does, not what was read early.
func TestEndReadsTheStateTheShellLeftLast(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		kept         bool
		x            string // $X in the next command
	}{
		{
			// A subshell that sets the session's EXIT trap dumps its own
			// state when it ends; the shell dumps its own later.
			name: "a subshell dumps first", kept: true, x: "main",
			script: `( eval "$(trap -p EXIT)"; X=sub ); sleep 0.2; X=main`,
		},
		{
			// A background job, which holds the output open, empties the
			// dump after the shell's own: no state is left.
			name: "a background job empties the dump", kept: false, x: "before",
			script: `d=$(trap -p EXIT | grep -o "/[^']*/dump"); X=bg; ( sleep 0.2; : >| "$d" ) &`,
		},
		{
			name: "nothing writes after the dump", kept: true, x: "plain",
			script: `X=plain`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTable(t, Options{})
			create(t, tb, "a")
			l, _ := tb.Begin("a")
			if o, _ := run(t, l, "X=before"); !o.StateKept {
				t.Fatalf("X=before: %s", o.Reason)
			}
			l, _ = tb.Begin("a")
			if o, _ := run(t, l, tc.script); o.StateKept != tc.kept {
				t.Errorf("%q: outcome %+v, want the state kept %v", tc.script, o, tc.kept)
			}
			l, _ = tb.Begin("a")
			if _, out := run(t, l, `echo "$X"`); strings.TrimSpace(out) != tc.x {
				t.Errorf(`after %q, echo "$X" printed %q, want %q`, tc.script, out, tc.x)
			}
		})
	}
}
