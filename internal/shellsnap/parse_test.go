package shellsnap

import (
	"errors"
	"maps"
	"testing"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// The three parse cases of the reference's shell_snapshot_tests.rs, with the
// reference's expected results (the steps: docs/design/snapshots.md#parse).

func TestSnapshotFiltersProfileExportsAfterCapture(t *testing.T) {
	policy := &envpolicy.Policy{
		Inherit:     envpolicy.InheritAll,
		Exclude:     []string{"PROFILE_DENIED"},
		Set:         map[string]string{"PROFILE_ALLOWED": "override"},
		IncludeOnly: []string{"PROFILE_*"},
	}
	in := "profile noise\n# Snapshot file\nfunction profile_helper() { :; }\n\x00PROFILE_ALLOWED=profile\x00PROFILE_DENIED=denied\x00PROFILE_SECRET=secret\x00PWD=/tmp\x00"
	snap, err := Parse([]byte(in), policy)
	if err != nil {
		t.Fatalf("Parse(%q) error = %v, want nil", in, err)
	}
	if want := map[string]string{"PROFILE_ALLOWED": "override"}; !maps.Equal(snap.Env, want) {
		t.Errorf("Parse(%q).Env = %v, want %v", in, snap.Env, want)
	}
	if want := "# Snapshot file\nfunction profile_helper() { :; }\n"; snap.State != want {
		t.Errorf("Parse(%q).State = %q, want %q", in, snap.State, want)
	}
}

func TestSnapshotPreservesProfileExportsWithRestrictiveInheritance(t *testing.T) {
	tests := []struct {
		name    string
		inherit envpolicy.Inherit
	}{
		{"none", envpolicy.InheritNone},
		{"core", envpolicy.InheritCore},
	}
	in := "# Snapshot file\n\x00PROFILE_ALLOWED=profile\x00SDKROOT=/sdk\x00PROFILE_SECRET=secret\x00PROFILE_DENIED=denied\x00"
	want := map[string]string{"PROFILE_ALLOWED": "profile", "SDKROOT": "/sdk"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &envpolicy.Policy{Inherit: tt.inherit, Exclude: []string{"PROFILE_DENIED"}}
			snap, err := Parse([]byte(in), policy)
			if err != nil {
				t.Fatalf("Parse(%q, inherit %s) error = %v, want nil", in, tt.inherit, err)
			}
			if !maps.Equal(snap.Env, want) {
				t.Errorf("Parse(%q, inherit %s).Env = %v, want %v", in, tt.inherit, snap.Env, want)
			}
		})
	}
}

func TestSnapshotCachesOnlyUnmanagedProxyState(t *testing.T) {
	tests := []struct {
		name    string
		exports string
		want    map[string]string
	}{
		{
			name:    "managed proxy is stripped",
			exports: "PROFILE_ALLOWED=profile\x00HTTP_PROXY=http://127.0.0.1:4321\x00CODEX_NETWORK_PROXY_ACTIVE=1\x00CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE=1\x00",
			want:    map[string]string{"PROFILE_ALLOWED": "profile"},
		},
		{
			name:    "user proxy is kept",
			exports: "PROFILE_ALLOWED=profile\x00HTTP_PROXY=http://user-proxy.example\x00",
			want:    map[string]string{"PROFILE_ALLOWED": "profile", "HTTP_PROXY": "http://user-proxy.example"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := "# Snapshot file\n\x00" + tt.exports
			snap, err := Parse([]byte(in), nil)
			if err != nil {
				t.Fatalf("Parse(%q) error = %v, want nil", in, err)
			}
			if !maps.Equal(snap.Env, tt.want) {
				t.Errorf("Parse(%q).Env = %v, want %v", in, snap.Env, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		wantReason Reason
		wantMsg    string
	}{
		{
			name:       "no NUL",
			in:         "# Snapshot file\nA=1\n",
			wantReason: ReasonMissingEnvironment,
			wantMsg:    "shell snapshot is missing its environment",
		},
		{
			name:       "empty output",
			in:         "",
			wantReason: ReasonMissingEnvironment,
			wantMsg:    "shell snapshot is missing its environment",
		},
		{
			name:       "no marker",
			in:         "profile noise\n\x00A=1\x00",
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot is missing its state marker",
		},
		{
			name:       "NUL in noise hides the marker",
			in:         "noise\x00more noise\n# Snapshot file\n\x00A=1\x00",
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot is missing its state marker",
		},
		{
			name:       "marker after the NUL",
			in:         "\x00# Snapshot file\n",
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot is missing its state marker",
		},
		{
			name:       "invalid byte in state",
			in:         "# Snapshot file\nf\xffoo\n\x00A=1\x00",
			wantReason: ReasonInvalidUTF8,
			wantMsg:    "shell snapshot state is not UTF-8: invalid utf-8 sequence of 1 bytes from index 17",
		},
		{
			name:       "broken three-byte sequence in state",
			in:         "# Snapshot file\n\xe2\x82A\x00",
			wantReason: ReasonInvalidUTF8,
			wantMsg:    "shell snapshot state is not UTF-8: invalid utf-8 sequence of 2 bytes from index 16",
		},
		{
			name:       "state ends inside a sequence",
			in:         "# Snapshot file\n\xf0\x9f\x98\x00",
			wantReason: ReasonInvalidUTF8,
			wantMsg:    "shell snapshot state is not UTF-8: incomplete utf-8 byte sequence from index 16",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := Parse([]byte(tt.in), nil)
			var ce *CaptureError
			if !errors.As(err, &ce) {
				t.Fatalf("Parse(%q) = %+v, %v, want a *CaptureError", tt.in, snap, err)
			}
			if ce.Reason != tt.wantReason || ce.Error() != tt.wantMsg {
				t.Errorf("Parse(%q) error = %s %q, want %s %q", tt.in, ce.Reason, ce.Error(), tt.wantReason, tt.wantMsg)
			}
		})
	}
}

func TestParseEnvironment(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantState string
		wantEnv   map[string]string
	}{
		{
			name:      "invalid UTF-8 noise before the marker is discarded",
			in:        "\xff\xfe noise\n# Snapshot file\nx\n\x00A=1\x00",
			wantState: "# Snapshot file\nx\n",
			wantEnv:   map[string]string{"A": "1"},
		},
		{
			name:      "first marker wins",
			in:        "# Snapshot file\n# Snapshot file\n\x00",
			wantState: "# Snapshot file\n# Snapshot file\n",
			wantEnv:   map[string]string{},
		},
		{
			name:      "non-UTF-8 piece is dropped",
			in:        "# Snapshot file\n\x00A=1\x00B=\xff\x00C=3\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"A": "1", "C": "3"},
		},
		{
			name:      "piece without = is dropped",
			in:        "# Snapshot file\n\x00A=1\x00garbage\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"A": "1"},
		},
		{
			name:      "empty name is kept",
			in:        "# Snapshot file\n\x00=value\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"": "value"},
		},
		{
			name:      "value keeps its =",
			in:        "# Snapshot file\n\x00A=b=c==\x00EMPTY=\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"A": "b=c==", "EMPTY": ""},
		},
		{
			name:      "last duplicate wins",
			in:        "# Snapshot file\n\x00A=1\x00A=2\x00A=3\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"A": "3"},
		},
		{
			name:      "empty pieces are skipped",
			in:        "# Snapshot file\n\x00\x00\x00A=1\x00\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"A": "1"},
		},
		{
			name:      "capture-shell variables are dropped",
			in:        "# Snapshot file\n\x00PWD=/x\x00OLDPWD=/y\x00SHLVL=1\x00_=/usr/bin/env\x00A=1\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"A": "1"},
		},
		{
			name:      "never-inherited names are dropped",
			in:        "# Snapshot file\n\x00node_repl_auth_token=x\x00OPENAI_IDENTITY_TOKEN_FILE=/t\x00A=1\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"A": "1"},
		},
		{
			name:      "proxy variables are kept without the marker",
			in:        "# Snapshot file\n\x00HTTPS_PROXY=http://p\x00NO_PROXY=localhost\x00",
			wantState: "# Snapshot file\n",
			wantEnv:   map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "localhost"},
		},
		{
			name:      "multibyte state and values",
			in:        "noise\n# Snapshot file\nalias é='echo 日本'\n\x00GREETING=héllo 🌍\x00",
			wantState: "# Snapshot file\nalias é='echo 日本'\n",
			wantEnv:   map[string]string{"GREETING": "héllo 🌍"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := Parse([]byte(tt.in), nil)
			if err != nil {
				t.Fatalf("Parse(%q) error = %v, want nil", tt.in, err)
			}
			if snap.State != tt.wantState {
				t.Errorf("Parse(%q).State = %q, want %q", tt.in, snap.State, tt.wantState)
			}
			if !maps.Equal(snap.Env, tt.wantEnv) {
				t.Errorf("Parse(%q).Env = %v, want %v", tt.in, snap.Env, tt.wantEnv)
			}
		})
	}
}

func TestParseRecordsCapturedNames(t *testing.T) {
	in := "# Snapshot file\n\x00A=1\x00HTTP_PROXY=p\x00CODEX_NETWORK_PROXY_ACTIVE=1\x00PWD=/x\x00bad\x00B=\xff\x00GITHUB_TOKEN=t\x00"
	snap, err := Parse([]byte(in), &envpolicy.Policy{})
	if err != nil {
		t.Fatalf("Parse(%q) error = %v, want nil", in, err)
	}
	// Captured is what the shell exported, before the proxy, policy and PWD
	// filters; pieces that are not NAME=VALUE in UTF-8 were never variables.
	want := map[string]bool{"A": true, "HTTP_PROXY": true, "CODEX_NETWORK_PROXY_ACTIVE": true, "PWD": true, "GITHUB_TOKEN": true}
	if !maps.Equal(snap.Captured, want) {
		t.Errorf("Parse(%q).Captured = %v, want %v", in, snap.Captured, want)
	}
	if wantEnv := map[string]string{"A": "1"}; !maps.Equal(snap.Env, wantEnv) {
		t.Errorf("Parse(%q).Env = %v, want %v", in, snap.Env, wantEnv)
	}
}

func TestParseCounts(t *testing.T) {
	tests := []struct {
		name                                    string
		state                                   string
		wantFunctions, wantAliases, wantOptions int
	}{
		{
			name:          "a heredoc header that would overflow is not a header",
			state:         "# Snapshot file\n# Functions\nf () \n{ \n    cat <<EOF\n# aliases 9223372036854775807\nEOF\n}\n\n# aliases 1\nalias a='x'\n",
			wantFunctions: 1, wantAliases: 1,
		},
		{
			name:  "seed state has no sections",
			state: "# Snapshot file\nfunction profile_helper() { :; }\n",
		},
		{
			name: "bash",
			state: "# Snapshot file\n# Unset all aliases to avoid conflicts with functions\nunalias -a 2>/dev/null || true\numask 0022\n" +
				"# shopts 2\nshopt -s expand_aliases\nshopt -s extglob\n" +
				"# Functions\n" +
				"f () \n{ \n    echo f\n}\n" +
				"g-h () \n{ \n    ( echo sub )\n}\n" +
				"k () \n{ \n    cat <<EOF\nnot a definition () \nEOF\n\n}\n" +
				"\n# aliases 2\nalias a='x'\nalias b='y'\n\n" +
				"# setopts 4\nset -o braceexpand\nset -o hashall\nset -o verbose -o xtrace\n\n",
			wantFunctions: 3, wantAliases: 2, wantOptions: 6,
		},
		{
			name: "zsh",
			state: "# Snapshot file\n# Unset all aliases to avoid conflicts with functions\nunalias -a 2>/dev/null || true\numask 0022\nfpath=('/f')\n" +
				"# Functions\n" +
				"compinit () {\n\t# undefined\n\tbuiltin autoload -XU\n}\n" +
				"f () {\n\techo \"multi\nline () {\"\n}\n" +
				"\n# aliases 1\nalias -g G='| cat'\n\n" +
				"# setopts 2\nsetopt login\nsetopt nonomatch\n\n",
			wantFunctions: 2, wantAliases: 1, wantOptions: 2,
		},
		{
			name:        "dash prints no functions",
			state:       "# Snapshot file\n# Functions\n\n# aliases 1\nalias hi='echo HI'\n\n# setopts 1\nset -o noclobber\n\n",
			wantAliases: 1, wantOptions: 1,
		},
		{
			name:  "malformed headers count nothing",
			state: "# Snapshot file\n# aliases x\n# setopts -1\n# Functions\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.state + "\x00"
			snap, err := Parse([]byte(in), nil)
			if err != nil {
				t.Fatalf("Parse(%q) error = %v, want nil", in, err)
			}
			got := [3]int{snap.FunctionCount, snap.AliasCount, snap.OptionCount}
			want := [3]int{tt.wantFunctions, tt.wantAliases, tt.wantOptions}
			if got != want {
				t.Errorf("Parse(%q) functions, aliases, options = %v, want %v", in, got, want)
			}
		})
	}
}
