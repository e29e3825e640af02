package shellsnap

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// restoreLine is the line of a replay script that restores chunks V0..Vn-1, for
// the eval prefix given ("eval" or "command eval").
func restoreLine(eval string, chunks int) string {
	var unset, expand []string
	for i := range chunks {
		name := StateEnvPrefix + string(rune('0'+i))
		unset = append(unset, name)
		expand = append(expand, "${"+name+"}")
	}
	return "if ! " + eval + ` "unset ` + strings.Join(unset, " ") + "\n" + strings.Join(expand, "") +
		`" >/dev/null; then printf 'failed to restore shell snapshot\n' >&2; fi` + "\n"
}

func TestReplayCommand(t *testing.T) {
	small := "# Snapshot file\nf () \n{ \n    :\n}\n"
	large := StateMarker + "\n" + strings.Repeat("x", MaxSnapshotEnvValueBytes)
	tests := []struct {
		name       string
		shell      string
		command    []string
		shellStart int
		state      string
		want       []string
		wantChunks int
	}{
		{
			name:    "bash, the reference's example",
			shell:   "bash",
			command: []string{"/bin/bash", "-lc", "true"},
			state:   small,
			want: []string{"/bin/bash", "-pc", "set +o privileged\n" +
				"if ! eval \"unset __CODEX_SHELL_SNAPSHOT_STATE_0\n" +
				"${__CODEX_SHELL_SNAPSHOT_STATE_0}\" >/dev/null; then printf 'failed to restore shell snapshot\\n' >&2; fi\n" +
				"true"},
			wantChunks: 1,
		},
		{
			name:       "zsh evaluates the script after the restore",
			shell:      "zsh",
			command:    []string{"/usr/bin/zsh", "-lc", "echo it's"},
			state:      small,
			want:       []string{"/usr/bin/zsh", "-fc", "setopt RCS\n" + restoreLine("eval", 1) + `eval 'echo it'\''s'`},
			wantChunks: 1,
		},
		{
			name:       "sh restores through command eval",
			shell:      "sh",
			command:    []string{"/bin/sh", "-lc", "true"},
			state:      small,
			want:       []string{"/bin/sh", "-c", restoreLine("command eval", 1) + "true"},
			wantChunks: 1,
		},
		{
			name:       "two chunks",
			shell:      "bash",
			command:    []string{"/bin/bash", "-lc", "true"},
			state:      large,
			want:       []string{"/bin/bash", "-pc", "set +o privileged\n" + restoreLine("eval", 2) + "true"},
			wantChunks: 2,
		},
		{
			name:       "wrapper prefix and extra args are preserved",
			shell:      "bash",
			command:    []string{"/usr/bin/sandbox", "--ro", "/", "/bin/bash", "-lc", "echo \"$0\" \"$1\"", "argzero", "one"},
			shellStart: 3,
			state:      small,
			want: []string{"/usr/bin/sandbox", "--ro", "/", "/bin/bash", "-pc",
				"set +o privileged\n" + restoreLine("eval", 1) + "echo \"$0\" \"$1\"", "argzero", "one"},
			wantChunks: 1,
		},
		{
			name:       "zsh with extra args",
			shell:      "zsh",
			command:    []string{"/usr/bin/zsh", "-lc", "print -r -- $1", "zsh", "arg"},
			state:      large,
			want:       []string{"/usr/bin/zsh", "-fc", "setopt RCS\n" + restoreLine("eval", 2) + "eval 'print -r -- $1'", "zsh", "arg"},
			wantChunks: 2,
		},
		{
			name:    "unsupported shell is left alone",
			shell:   "fish",
			command: []string{"/usr/bin/fish", "-lc", "true"},
			state:   small,
			want:    []string{"/usr/bin/fish", "-lc", "true"},
		},
		{
			name:       "command too short for the shell start is left alone",
			shell:      "bash",
			command:    []string{"/usr/bin/sandbox", "/bin/bash", "-lc"},
			shellStart: 1,
			state:      small,
			want:       []string{"/usr/bin/sandbox", "/bin/bash", "-lc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": "/home/u"}
			in := ReplayInput{
				Snapshot:   &Snapshot{State: tt.state, Env: map[string]string{}},
				Shell:      tt.shell,
				Command:    tt.command,
				ShellStart: tt.shellStart,
				Env:        env,
				RequestEnv: env,
			}
			gotCommand, gotEnv := Replay(in)
			if !slices.Equal(gotCommand, tt.want) {
				t.Errorf("Replay(%s %q).command =\n%q\nwant\n%q", tt.shell, tt.command, gotCommand, tt.want)
			}
			var chunks []string
			for i := 0; ; i++ {
				chunk, ok := gotEnv[StateEnvPrefix+string(rune('0'+i))]
				if !ok {
					break
				}
				if len(chunk) > MaxSnapshotEnvValueBytes {
					t.Errorf("Replay(%s %q) chunk %d has %d bytes, want at most %d", tt.shell, tt.command, i, len(chunk), MaxSnapshotEnvValueBytes)
				}
				chunks = append(chunks, chunk)
			}
			if len(chunks) != tt.wantChunks {
				t.Errorf("Replay(%s %q) has %d chunk variables, want %d", tt.shell, tt.command, len(chunks), tt.wantChunks)
			}
			if tt.wantChunks > 0 && strings.Join(chunks, "") != tt.state {
				t.Errorf("Replay(%s %q) chunks do not add up to the state", tt.shell, tt.command)
			}
		})
	}
}

func TestChunkState(t *testing.T) {
	limit := MaxSnapshotEnvValueBytes
	tests := []struct {
		name  string
		state string
		limit int
		want  []string
	}{
		{name: "empty", state: "", limit: 4, want: []string{""}},
		{name: "under the limit", state: "abc", limit: 4, want: []string{"abc"}},
		{name: "at the limit", state: "abcd", limit: 4, want: []string{"abcd"}},
		{name: "one past the limit", state: "abcde", limit: 4, want: []string{"abcd", "e"}},
		{name: "two-byte character across the cut", state: "abcé", limit: 4, want: []string{"abc", "é"}},
		{name: "three-byte characters", state: "日本語", limit: 4, want: []string{"日", "本", "語"}},
		{name: "four-byte character across the cut", state: "ab🌍c", limit: 4, want: []string{"ab", "🌍", "c"}},
		{name: "four-byte character at the limit", state: "🌍🌍", limit: 4, want: []string{"🌍", "🌍"}},
		{
			name:  "real limit, two-byte character across the cut",
			state: strings.Repeat("a", limit-1) + "é" + "b",
			limit: limit,
			want:  []string{strings.Repeat("a", limit-1), "éb"},
		},
		{
			name:  "real limit, four-byte character across the cut",
			state: strings.Repeat("a", limit-2) + "🌍",
			limit: limit,
			want:  []string{strings.Repeat("a", limit-2), "🌍"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chunkState(tt.state, tt.limit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("chunkState(%.40q..., %d) = %d chunks %.80q, want %d chunks %.80q", tt.state, tt.limit, len(got), got, len(tt.want), tt.want)
			}
		})
	}
}

func TestChunkStateMaximalState(t *testing.T) {
	// 512 KiB of three-byte characters, whose boundaries never fall on the limit.
	state := strings.Repeat("日", MaxSnapshotBytes/3)
	chunks := chunkState(state, MaxSnapshotEnvValueBytes)
	if len(chunks) != 9 {
		t.Errorf("chunkState(512 KiB) = %d chunks, want 9", len(chunks))
	}
	for i, chunk := range chunks {
		if len(chunk) > MaxSnapshotEnvValueBytes || !utf8.ValidString(chunk) {
			t.Errorf("chunkState(512 KiB) chunk %d: %d bytes, valid UTF-8 %t; want at most %d bytes of valid UTF-8", i, len(chunk), utf8.ValidString(chunk), MaxSnapshotEnvValueBytes)
		}
	}
	if strings.Join(chunks, "") != state {
		t.Errorf("chunkState(512 KiB) chunks do not add up to the state")
	}
}

func TestReplayEnv(t *testing.T) {
	base := map[string]string{"HOME": "/h", "PATH": "/usr/bin:/bin"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	names := func(names ...string) map[string]bool {
		out := make(map[string]bool)
		for _, n := range names {
			out[n] = true
		}
		return out
	}
	profilePath := "/h/bin:/usr/bin:/bin"
	tests := []struct {
		name       string
		env        map[string]string
		requestEnv map[string]string
		snapEnv    map[string]string
		captured   map[string]bool
		captureEnv map[string]string
		want       map[string]string
	}{
		{
			name:       "reference merge: request wins, snapshot beats inherited",
			env:        with(base, "INHERITED", "server"),
			requestEnv: base,
			snapEnv:    map[string]string{"PATH": profilePath, "PROFILE": "1", "INHERITED": "profile"},
			captured:   names("HOME", "PATH", "PROFILE", "INHERITED"),
			want:       with(base, "PROFILE", "1", "INHERITED", "profile"),
		},
		{
			name:       "request equal to the capture's keeps the profile's value",
			env:        base,
			requestEnv: base,
			snapEnv:    map[string]string{"HOME": "/h", "PATH": profilePath},
			captured:   names("HOME", "PATH"),
			captureEnv: base,
			want:       with(base, "PATH", profilePath),
		},
		{
			name:       "request that differs from the capture's wins",
			env:        with(base, "PATH", "/opt/bin"),
			requestEnv: with(base, "PATH", "/opt/bin"),
			snapEnv:    map[string]string{"PATH": profilePath},
			captured:   names("HOME", "PATH"),
			captureEnv: base,
			want:       with(base, "PATH", "/opt/bin"),
		},
		{
			name:       "request variable the capture did not have wins",
			env:        with(base, "TOOL", "request"),
			requestEnv: with(base, "TOOL", "request"),
			snapEnv:    map[string]string{"TOOL": "profile"},
			captured:   names("HOME", "PATH", "TOOL"),
			captureEnv: base,
			want:       with(base, "TOOL", "request"),
		},
		{
			name:       "prepared value of a request key is what overrides",
			env:        with(base, "HTTP_PROXY", "http://managed"),
			requestEnv: with(base, "HTTP_PROXY", "http://user"),
			snapEnv:    map[string]string{"HTTP_PROXY": "http://profile"},
			captured:   names("HOME", "PATH", "HTTP_PROXY"),
			want:       with(base, "HTTP_PROXY", "http://managed"),
		},
		{
			name:       "prepared value equal to the capture's keeps the profile's value",
			env:        with(base, "HTTP_PROXY", "http://managed"),
			requestEnv: with(base, "HTTP_PROXY", "http://user"),
			snapEnv:    map[string]string{"HTTP_PROXY": "http://profile"},
			captured:   names("HOME", "PATH", "HTTP_PROXY"),
			captureEnv: with(base, "HTTP_PROXY", "http://managed"),
			want:       with(base, "HTTP_PROXY", "http://profile"),
		},
		{
			name:       "variable the profile unset is unset",
			env:        with(base, "DROP_ME", "x"),
			requestEnv: with(base, "DROP_ME", "x"),
			snapEnv:    map[string]string{},
			captured:   names("HOME", "PATH"),
			captureEnv: with(base, "DROP_ME", "x"),
			want:       base,
		},
		{
			name:       "changed request value beats the profile's unset",
			env:        with(base, "DROP_ME", "y"),
			requestEnv: with(base, "DROP_ME", "y"),
			snapEnv:    map[string]string{},
			captured:   names("HOME", "PATH"),
			captureEnv: with(base, "DROP_ME", "x"),
			want:       with(base, "DROP_ME", "y"),
		},
		{
			name:       "inherited variable the profile unset is unset",
			env:        with(base, "INHERITED", "server"),
			requestEnv: base,
			snapEnv:    map[string]string{},
			captured:   names("HOME", "PATH"),
			captureEnv: with(base, "INHERITED", "server"),
			want:       base,
		},
		{
			name:       "variable that Parse filtered out is not an unset",
			env:        with(base, "GITHUB_TOKEN", "t", "PWD", "/w"),
			requestEnv: with(base, "GITHUB_TOKEN", "t", "PWD", "/w"),
			snapEnv:    map[string]string{},
			captured:   names("HOME", "PATH", "GITHUB_TOKEN", "PWD"),
			captureEnv: with(base, "GITHUB_TOKEN", "t", "PWD", "/w"),
			want:       with(base, "GITHUB_TOKEN", "t", "PWD", "/w"),
		},
		{
			name:       "policy set value is not an unset",
			env:        base,
			requestEnv: base,
			snapEnv:    map[string]string{"PROFILE_ALLOWED": "override"},
			captured:   names("HOME", "PATH"),
			captureEnv: with(base, "PROFILE_ALLOWED", "x"),
			want:       with(base, "PROFILE_ALLOWED", "override"),
		},
		{
			name:       "unknown captured names unset nothing",
			env:        with(base, "DROP_ME", "x"),
			requestEnv: with(base, "DROP_ME", "x"),
			snapEnv:    map[string]string{},
			captureEnv: with(base, "DROP_ME", "x"),
			want:       with(base, "DROP_ME", "x"),
		},
		{
			name:       "reference merge unsets nothing",
			env:        with(base, "DROP_ME", "x"),
			requestEnv: with(base, "DROP_ME", "x"),
			snapEnv:    map[string]string{},
			captured:   names("HOME", "PATH"),
			want:       with(base, "DROP_ME", "x"),
		},
		{
			name:       "never-inherited names are dropped",
			env:        with(base, "NODE_REPL_AUTH_TOKEN", "r"),
			requestEnv: with(base, "NODE_REPL_AUTH_TOKEN", "r"),
			snapEnv:    map[string]string{"openai_federation_rule_id": "s"},
			captured:   names("HOME", "PATH", "openai_federation_rule_id"),
			want:       base,
		},
		{
			name:       "SHLVL and _ of the snapshot are not replayed",
			env:        with(base, "SHLVL", "3"),
			requestEnv: with(base, "SHLVL", "3"),
			snapEnv:    map[string]string{"SHLVL": "1", "_": "/usr/bin/env"},
			captured:   names("HOME", "PATH", "SHLVL", "_"),
			captureEnv: with(base, "SHLVL", "3"),
			want:       with(base, "SHLVL", "3"),
		},
		{
			name:       "foreign chunk variables are removed",
			env:        with(base, StateEnvPrefix+"7", "stale", StateEnvPrefix+"0", "forged"),
			requestEnv: with(base, StateEnvPrefix+"7", "stale", StateEnvPrefix+"0", "forged"),
			snapEnv:    map[string]string{StateEnvPrefix + "3": "profile"},
			captured:   names("HOME", "PATH"),
			want:       base,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const state = "# Snapshot file\n"
			in := ReplayInput{
				Snapshot:   &Snapshot{State: state, Env: tt.snapEnv, Captured: tt.captured},
				Shell:      "bash",
				Command:    []string{"/bin/bash", "-lc", "true"},
				Env:        tt.env,
				RequestEnv: tt.requestEnv,
				CaptureEnv: tt.captureEnv,
			}
			_, got := Replay(in)
			if chunk := got[StateEnvPrefix+"0"]; chunk != state {
				t.Errorf("Replay(%s) chunk 0 = %q, want %q", tt.name, chunk, state)
			}
			delete(got, StateEnvPrefix+"0")
			if !maps.Equal(got, tt.want) {
				t.Errorf("Replay(env %v, request %v, snapshot %v, capture %v) env = %v, want %v",
					tt.env, tt.requestEnv, tt.snapEnv, tt.captureEnv, got, tt.want)
			}
		})
	}
}

func TestReplayDoesNotModifyInputs(t *testing.T) {
	command := []string{"/bin/bash", "-lc", "true"}
	env := map[string]string{"HOME": "/h", "PATH": "/usr/bin:/bin", "DROP_ME": "x"}
	snapEnv := map[string]string{"PATH": "/h/bin:/usr/bin:/bin", "SHLVL": "1"}
	in := ReplayInput{
		Snapshot:   &Snapshot{State: "# Snapshot file\n", Env: maps.Clone(snapEnv), Captured: map[string]bool{"PATH": true}},
		Shell:      "bash",
		Command:    slices.Clone(command),
		Env:        maps.Clone(env),
		RequestEnv: maps.Clone(env),
		CaptureEnv: maps.Clone(env),
	}
	Replay(in)
	if !slices.Equal(in.Command, command) || !maps.Equal(in.Env, env) || !maps.Equal(in.RequestEnv, env) ||
		!maps.Equal(in.CaptureEnv, env) || !maps.Equal(in.Snapshot.Env, snapEnv) {
		t.Errorf("Replay(%+v) modified its input", in)
	}
}
