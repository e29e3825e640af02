package shellsnap

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDiffEnv(t *testing.T) {
	tests := []struct {
		name           string
		capture, final map[string]string
		kept           map[string]string // nil: final
		want           []envChange
	}{
		{name: "unchanged", capture: map[string]string{"A": "1"}, final: map[string]string{"A": "1"}},
		{name: "set", capture: map[string]string{}, final: map[string]string{"EDITOR": "vim"},
			want: []envChange{{name: "EDITOR", op: envSet, value: "vim"}}},
		{name: "unset", capture: map[string]string{"DROP_ME": "x"}, final: map[string]string{},
			want: []envChange{{name: "DROP_ME", op: envUnset}}},
		{name: "prepended", capture: map[string]string{"PATH": "/usr/bin:/bin"}, final: map[string]string{"PATH": "/h/bin:/usr/bin:/bin"},
			want: []envChange{{name: "PATH", op: envSet, value: "/h/bin:/usr/bin:/bin", relative: true, prefix: "/h/bin:"}}},
		{name: "appended and prepended", capture: map[string]string{"PATH": "/usr/bin"}, final: map[string]string{"PATH": "/a:/usr/bin:/z"},
			want: []envChange{{name: "PATH", op: envSet, value: "/a:/usr/bin:/z", relative: true, prefix: "/a:", suffix: ":/z"}}},
		{name: "not on a colon is a new value", capture: map[string]string{"PATH": "/usr/bin"}, final: map[string]string{"PATH": "/usr/bin2"},
			want: []envChange{{name: "PATH", op: envSet, value: "/usr/bin2"}}},
		{name: "rebuilt is a new value", capture: map[string]string{"PATH": "/usr/bin:/bin"}, final: map[string]string{"PATH": "/usr/local/bin:/usr/bin"},
			want: []envChange{{name: "PATH", op: envSet, value: "/usr/local/bin:/usr/bin"}}},
		{name: "the shell's own and the server's left alone",
			capture: map[string]string{"SHLVL": "1", "__SNAPEXEC_BASH_ENV": "x"}, final: map[string]string{"PWD": "/", "SHLVL": "2", "_": "/usr/bin/env", "__snapexec_n": "1"}},
		{name: "not an identifier", capture: map[string]string{}, final: map[string]string{"a-b": "1", "BASH_FUNC_f%%": "() { :; }"}},
		{name: "kept out by the policy is not set", capture: map[string]string{}, final: map[string]string{"SECRET": "s", "OK": "1"},
			kept: map[string]string{"OK": "1"}, want: []envChange{{name: "OK", op: envSet, value: "1"}}},
		{name: "bytes kept", capture: map[string]string{}, final: map[string]string{"BAD": "\xff\xfe"},
			want: []envChange{{name: "BAD", op: envSet, value: "\xff\xfe"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept := tt.kept
			if kept == nil {
				kept = tt.final
			}
			if got := diffEnv(tt.capture, tt.final, kept, nil); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diffEnv(%v, %v) = %+v, want %+v", tt.capture, tt.final, got, tt.want)
			}
		})
	}
}

// TestReplayEnvIsTheRequests: a replay's environment is the later
// request's own with the profile's changes, as its own login shell's: nothing
// only the capturing request sent (a variable, an exported function) reaches
// it, its own list is kept with the profile's prepend around it, and what the
// profile unset stays unset.
func TestReplayEnvIsTheRequests(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bash_profile"), "export TOOLPATH=\"$HOME/tools:$TOOLPATH\"\nexport EDITOR=vim\nunset DROP_ME\n")
	c := newTestCache(t, Options{Capture: NewCapturer(newTestProcs(t))})
	t.Cleanup(c.Close)
	probe := `echo "TOOLPATH=$TOOLPATH EDITOR=$EDITOR TOKEN=${API_TOKEN-unset} DROP=${DROP_ME-unset} LATER=${LATER-unset}"; type -t sent_fn || echo no sent_fn`
	first := realBashCommand(home, probe)
	first.Env["API_TOKEN"] = "secret-of-the-first"
	first.Env["DROP_ME"] = "x"
	first.Env["BASH_FUNC_sent_fn%%"] = "() { echo sent; }"
	first.Env["TOOLPATH"] = "/first/tools"
	if p, err := c.Prepare(context.Background(), bashRequest("s"), first); err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Fatalf("Prepare(first) = %+v, %v; want used", p.Receipt, err)
	}
	later := realBashCommand(home, probe)
	later.Env["TOOLPATH"] = "/opt/tools:/usr/tools"
	later.Env["LATER"] = "mine"
	later.Env["DROP_ME"] = "y"
	p, err := c.Prepare(context.Background(), bashRequest("s"), later)
	if err != nil || p.Receipt.Outcome != OutcomeUsed {
		t.Fatalf("Prepare(later) = %+v, %v; want used", p.Receipt, err)
	}
	argv, env := replayOf(bashRequest("s"), later, p)
	for name, value := range env {
		if strings.Contains(value, "secret-of-the-first") || strings.Contains(name, "sent_fn") {
			t.Errorf("replay environment has %s from the first request", name)
		}
	}
	stdout, _ := runReplay(t, home, argv, env)
	want := "TOOLPATH=" + home + "/tools:/opt/tools:/usr/tools EDITOR=vim TOKEN=unset DROP=unset LATER=mine\nno sent_fn\n"
	if login, _ := runReplay(t, home, later.Argv, later.Env); stdout != want || login != want {
		t.Errorf("later replay = %q, its login shell %q; want %q", stdout, login, want)
	}
}
