package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/client"
)

// TestSessions: a session made by the CLI carries the state of one exec to
// the next, passes output and exit status through as exec does, forks, shows
// and ends; --json prints the answers.
func TestSessions(t *testing.T) {
	if r := cli(t, nil, "sessions", "new", "cli-session", "--cwd", "/tmp", "--env", "PATH=/usr/bin:/bin"); r.code != 0 || string(r.stdout) != "cli-session\n" {
		t.Fatalf("sessions new: %s", r)
	}
	if r := cli(t, nil, "sessions", "exec", "cli-session", "cd / && export FOO=bar && greet() { echo hi $1; }"); r.code != 0 || len(r.stdout) != 0 {
		t.Fatalf("sessions exec (the state change): %s", r)
	}
	r := cli(t, nil, "sessions", "exec", "cli-session", `pwd; echo "FOO=$FOO"; greet you; printf 'err \376' >&2; exit 3`)
	if string(r.stdout) != "/\nFOO=bar\nhi you\n" || !bytes.Equal(r.stderr, []byte("err \xfe")) || r.code != 3 {
		t.Errorf("sessions exec = %s; want the state carried, both streams byte for byte, exit 3", r)
	}
	if r := cli(t, nil, "sessions", "fork", "cli-session", "cli-fork"); r.code != 0 || string(r.stdout) != "cli-fork\n" {
		t.Fatalf("sessions fork: %s", r)
	}
	if r := cli(t, nil, "sessions", "exec", "cli-fork", "unset FOO"); r.code != 0 {
		t.Fatalf("sessions exec in the fork: %s", r)
	}
	r = cli(t, nil, "--json", "sessions", "exec", "cli-session", `echo "${FOO-unset}"`)
	var res client.SessionExecResult
	if err := json.Unmarshal(r.stdout, &res); err != nil || string(res.StdoutData()) != "bar\n" || !res.Session.StateKept || r.code != 0 {
		t.Errorf("--json sessions exec in the original after the fork unset FOO = %s (%v); want bar, the state kept", r, err)
	}
	r = cli(t, nil, "sessions", "show", "cli-session")
	for _, want := range []string{"cwd        /\n", "FOO", "greet", "exit 3"} {
		if !strings.Contains(string(r.stdout), want) {
			t.Errorf("sessions show lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, args := range [][]string{{"sessions", "exec", ""}, {"sessions", "rm", ""}} {
		if r := cli(t, nil, append([]string{"__complete"}, args...)...); !strings.Contains(string(r.stdout), "cli-fork\n") {
			t.Errorf("__complete %s: %s; want the sessions offered", strings.Join(args, " "), r)
		}
	}
	r = cli(t, nil, "sessions")
	if !strings.Contains(string(r.stdout), "cli-session") || !strings.Contains(string(r.stdout), "cli-fork") {
		t.Errorf("sessions lists %q, want both sessions", r.stdout)
	}
	for _, id := range []string{"cli-session", "cli-fork"} {
		if r := cli(t, nil, "sessions", "rm", id); r.code != 0 {
			t.Errorf("sessions rm %s: %s", id, r)
		}
	}
	if r := cli(t, nil, "sessions", "exec", "cli-session", "true"); r.code == 0 || !strings.Contains(string(r.stderr), "not_found") {
		t.Errorf("sessions exec after rm = %s; want not_found", r)
	}
}
