package shellsnap

import (
	"maps"
	"slices"
	"testing"
)

func TestReplayCommand(t *testing.T) {
	const restore = "/r/it's"
	tests := []struct {
		name       string
		shell      string
		command    []string
		shellStart int
		want       []string
	}{
		{
			name:    "bash runs its login shell without the profile",
			shell:   "bash",
			command: []string{"/bin/bash", "-lc", "true"},
			want:    []string{"/bin/bash", "--noprofile", "-lc", "true"},
		},
		{
			name:    "zsh runs as sent",
			shell:   "zsh",
			command: []string{"/usr/bin/zsh", "-lc", "echo it's"},
			want:    []string{"/usr/bin/zsh", "-lc", "echo it's"},
		},
		{
			name:    "sh sources the restore on the script's first line",
			shell:   "sh",
			command: []string{"/bin/sh", "-lc", "true"},
			want:    []string{"/bin/sh", "-c", `command . '/r/it'\''s'; true`},
		},
		{
			name:       "wrapper prefix and extra args are preserved",
			shell:      "bash",
			command:    []string{"/usr/bin/sandbox", "--ro", "/", "/bin/bash", "-lc", "echo \"$0\" \"$1\"", "argzero", "one"},
			shellStart: 3,
			want:       []string{"/usr/bin/sandbox", "--ro", "/", "/bin/bash", "--noprofile", "-lc", "echo \"$0\" \"$1\"", "argzero", "one"},
		},
		{
			name:    "zsh with extra args",
			shell:   "zsh",
			command: []string{"/usr/bin/zsh", "-lc", "print -r -- $1", "zsh", "arg"},
			want:    []string{"/usr/bin/zsh", "-lc", "print -r -- $1", "zsh", "arg"},
		},
		{
			name:       "sh with a wrapper and extra args",
			shell:      "sh",
			command:    []string{"wrap", "/bin/sh", "-lc", "echo $1", "zero", "one"},
			shellStart: 1,
			want:       []string{"wrap", "/bin/sh", "-c", `command . '/r/it'\''s'; echo $1`, "zero", "one"},
		},
		{
			name:    "unsupported shell is left alone",
			shell:   "fish",
			command: []string{"/usr/bin/fish", "-lc", "true"},
			want:    []string{"/usr/bin/fish", "-lc", "true"},
		},
		{
			name:       "command too short for the shell start is left alone",
			shell:      "bash",
			command:    []string{"/usr/bin/sandbox", "/bin/bash", "-lc"},
			shellStart: 1,
			want:       []string{"/usr/bin/sandbox", "/bin/bash", "-lc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": "/home/u"}
			got, _ := Replay(ReplayInput{Snapshot: &Snapshot{restore: restore}, Shell: tt.shell, Command: tt.command, ShellStart: tt.shellStart, Env: env})
			if !slices.Equal(got, tt.want) {
				t.Errorf("Replay(%s %q).command =\n%q\nwant\n%q", tt.shell, tt.command, got, tt.want)
			}
		})
	}
	if got, _ := Replay(ReplayInput{Shell: "bash", Command: []string{"/bin/bash", "-lc", "true"}}); !slices.Equal(got, []string{"/bin/bash", "-lc", "true"}) {
		t.Errorf("Replay(no snapshot).command = %q, want the command as sent", got)
	}
}

// TestReplayEnv: a replay's environment is the launch's, without the
// server's internal names, and with the startup variable that names the
// restore (bash's BASH_ENV, zsh's ZDOTDIR), whose request value travels in
// an internal name that the restore gives back. The profile's changes are
// the restore's (TestReplayEnvIsTheRequests).
func TestReplayEnv(t *testing.T) {
	const restore = "/r/1"
	base := map[string]string{"HOME": "/h", "PATH": "/usr/bin:/bin"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name  string
		shell string
		env   map[string]string
		want  map[string]string
	}{
		{"bash", "bash", base, with(base, "BASH_ENV", restore)},
		{"bash with the request's BASH_ENV", "bash", with(base, "BASH_ENV", "/h/.bashenv", "ZDOTDIR", "/z"),
			with(base, "BASH_ENV", restore, "__SNAPEXEC_BASH_ENV", "/h/.bashenv", "ZDOTDIR", "/z")},
		{"zsh with the request's ZDOTDIR", "zsh", with(base, "ZDOTDIR", "/z", "BASH_ENV", "/b"),
			with(base, "ZDOTDIR", restore, "__SNAPEXEC_ZDOTDIR", "/z", "BASH_ENV", "/b")},
		{"sh", "sh", with(base, "BASH_ENV", "/b", "ENV", "/h/.shrc"), with(base, "BASH_ENV", "/b", "ENV", "/h/.shrc")},
		{"foreign internal names are removed", "bash", with(base, "__SNAPEXEC_BASH_ENV", "/forged", "__SNAPEXEC_X", "x"), with(base, "BASH_ENV", restore)},
		{"no environment", "bash", nil, map[string]string{"BASH_ENV": restore}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := Replay(ReplayInput{Snapshot: &Snapshot{restore: restore}, Shell: tt.shell, Command: []string{"/bin/" + tt.shell, "-lc", "true"}, Env: tt.env})
			if !maps.Equal(got, tt.want) {
				t.Errorf("Replay(%s, env %v) env = %v, want %v", tt.shell, tt.env, got, tt.want)
			}
		})
	}
}

func TestReplayDoesNotModifyInputs(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "sh"} {
		command := []string{"/bin/" + shell, "-lc", "true"}
		env := map[string]string{"HOME": "/h", "BASH_ENV": "/b", "ZDOTDIR": "/z", "__SNAPEXEC_X": "x"}
		in := ReplayInput{Snapshot: &Snapshot{restore: "/r/1"}, Shell: shell, Command: slices.Clone(command), Env: maps.Clone(env)}
		Replay(in)
		if !slices.Equal(in.Command, command) || !maps.Equal(in.Env, env) {
			t.Errorf("Replay(%+v) modified its input", in)
		}
	}
}
