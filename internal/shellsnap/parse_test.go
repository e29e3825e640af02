package shellsnap

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/snapexec/snapexec/internal/envpolicy"
)

// The three parse cases of the reference's shell_snapshot_tests.rs, with the
// reference's expected results (the steps: docs/design/snapshots.md#parse),
// on a capture of this server's format: the reference's state, a function
// profile_helper, is its fn record.

// profileHelper is the reference's state as a bash capture prints it.
var profileHelper = []record{{kind: "fn", name: "profile_helper", payload: "profile_helper () \n{ \n    :\n}"}}

// mustParse is parseCapture of out under testNonce, which must succeed.
func mustParse(t *testing.T, out []byte, policy *envpolicy.Policy) (*Snapshot, []record) {
	t.Helper()
	snap, recs, err := parseCapture(out, policy, testNonce)
	if err != nil {
		t.Fatalf("parseCapture(%q) error = %v, want nil", out, err)
	}
	return snap, recs
}

func TestSnapshotFiltersProfileExportsAfterCapture(t *testing.T) {
	policy := &envpolicy.Policy{
		Inherit:     envpolicy.InheritAll,
		Exclude:     []string{"PROFILE_DENIED"},
		Set:         map[string]string{"PROFILE_ALLOWED": "override"},
		IncludeOnly: []string{"PROFILE_*"},
	}
	in := captureOutput(testNonce, "bash", "profile noise\n", profileHelper,
		"PROFILE_ALLOWED=profile", "PROFILE_DENIED=denied", "PROFILE_SECRET=secret", "PWD=/tmp")
	snap, recs := mustParse(t, in, policy)
	if want := map[string]string{"PROFILE_ALLOWED": "override"}; !maps.Equal(snap.Env, want) {
		t.Errorf("parseCapture(%q).Env = %v, want %v", in, snap.Env, want)
	}
	if want := captureOutput(testNonce, "bash", "", profileHelper); snap.StateBytes != len(want)-1 {
		t.Errorf("parseCapture(%q).StateBytes = %d, want the records from the marker on, %d bytes", in, snap.StateBytes, len(want)-1)
	}
	if !slices.Equal(recs, profileHelper) {
		t.Errorf("parseCapture(%q) records = %q, want %q", in, recs, profileHelper)
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
	in := captureOutput(testNonce, "bash", "", nil, "PROFILE_ALLOWED=profile", "SDKROOT=/sdk", "PROFILE_SECRET=secret", "PROFILE_DENIED=denied")
	want := map[string]string{"PROFILE_ALLOWED": "profile", "SDKROOT": "/sdk"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &envpolicy.Policy{Inherit: tt.inherit, Exclude: []string{"PROFILE_DENIED"}}
			if snap, _ := mustParse(t, in, policy); !maps.Equal(snap.Env, want) {
				t.Errorf("parseCapture(%q, inherit %s).Env = %v, want %v", in, tt.inherit, snap.Env, want)
			}
		})
	}
}

func TestSnapshotCachesOnlyUnmanagedProxyState(t *testing.T) {
	tests := []struct {
		name    string
		exports []string
		want    map[string]string
	}{
		{
			name:    "managed proxy is stripped",
			exports: []string{"PROFILE_ALLOWED=profile", "HTTP_PROXY=http://127.0.0.1:4321", "CODEX_NETWORK_PROXY_ACTIVE=1", "CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE=1"},
			want:    map[string]string{"PROFILE_ALLOWED": "profile"},
		},
		{
			name:    "user proxy is kept",
			exports: []string{"PROFILE_ALLOWED=profile", "HTTP_PROXY=http://user-proxy.example"},
			want:    map[string]string{"PROFILE_ALLOWED": "profile", "HTTP_PROXY": "http://user-proxy.example"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := captureOutput(testNonce, "bash", "", nil, tt.exports...)
			if snap, _ := mustParse(t, in, nil); !maps.Equal(snap.Env, tt.want) {
				t.Errorf("parseCapture(%q).Env = %v, want %v", in, snap.Env, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	whole := string(captureOutput(testNonce, "bash", "", profileHelper, "A=1"))
	state, env, _ := strings.Cut(whole, "\x00")
	tests := []struct {
		name       string
		in         string
		wantReason Reason
		wantMsg    string
	}{
		{
			name:       "no NUL",
			in:         state,
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
			in:         "profile noise\n\x00" + env,
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot is missing its state marker",
		},
		{
			name:       "NUL in noise hides the marker",
			in:         "noise\x00more noise\n" + whole,
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot is missing its state marker",
		},
		{
			name:       "marker after the NUL",
			in:         "\x00" + state,
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot is missing its state marker",
		},
		{
			name:       "another capture's nonce",
			in:         string(captureOutput("fedcba9876543210fedcba9876543210", "bash", "", profileHelper, "A=1")),
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot is missing its state marker",
		},
		{
			name:       "no end record",
			in:         StateMarker + "\n" + testNonce + " begin bash\n\n" + testNonce + " fn f\nf () \n{ \n    :\n}\n\x00" + env,
			wantReason: ReasonMissingState,
			wantMsg:    "shell snapshot state is incomplete",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, _, err := parseCapture([]byte(tt.in), nil, testNonce)
			var ce *CaptureError
			if !errors.As(err, &ce) {
				t.Fatalf("parseCapture(%q) = %+v, %v, want a *CaptureError", tt.in, snap, err)
			}
			if ce.Reason != tt.wantReason || ce.Error() != tt.wantMsg {
				t.Errorf("parseCapture(%q) error = %s %q, want %s %q", tt.in, ce.Reason, ce.Error(), tt.wantReason, tt.wantMsg)
			}
		})
	}
}

func TestParseEnvironment(t *testing.T) {
	tests := []struct {
		name    string
		noise   string
		recs    []record
		exports []string
		wantEnv map[string]string
	}{
		{
			name:    "invalid UTF-8 noise before the marker is discarded",
			noise:   "\xff\xfe noise\n",
			exports: []string{"A=1"},
			wantEnv: map[string]string{"A": "1"},
		},
		{
			name:    "a record that looks like the marker is a payload",
			noise:   StateMarker + "\n",
			recs:    []record{{kind: "vars", payload: StateMarker + "\ndeclare -- X=\"1\""}},
			wantEnv: map[string]string{},
		},
		{
			name:    "bytes that are not UTF-8 are kept in the state",
			recs:    []record{{kind: "vars", payload: "declare -- latin=$'caf\xe9'"}, {kind: "fn", name: "f\xff", payload: "f\xff () \n{ \n    :\n}"}},
			wantEnv: map[string]string{},
		},
		{
			name:    "non-UTF-8 piece is dropped",
			exports: []string{"A=1", "B=\xff", "C=3"},
			wantEnv: map[string]string{"A": "1", "C": "3"},
		},
		{
			name:    "piece without = is dropped",
			exports: []string{"A=1", "garbage"},
			wantEnv: map[string]string{"A": "1"},
		},
		{
			name:    "empty name is kept",
			exports: []string{"=value"},
			wantEnv: map[string]string{"": "value"},
		},
		{
			name:    "value keeps its =",
			exports: []string{"A=b=c==", "EMPTY="},
			wantEnv: map[string]string{"A": "b=c==", "EMPTY": ""},
		},
		{
			name:    "last duplicate wins",
			exports: []string{"A=1", "A=2", "A=3"},
			wantEnv: map[string]string{"A": "3"},
		},
		{
			name:    "empty pieces are skipped",
			exports: []string{"", "", "A=1", ""},
			wantEnv: map[string]string{"A": "1"},
		},
		{
			name:    "capture-shell variables are dropped",
			exports: []string{"PWD=/x", "OLDPWD=/y", "SHLVL=1", "_=/usr/bin/env", "A=1"},
			wantEnv: map[string]string{"A": "1"},
		},
		{
			name:    "never-inherited names are dropped",
			exports: []string{"node_repl_auth_token=x", "OPENAI_IDENTITY_TOKEN_FILE=/t", "A=1"},
			wantEnv: map[string]string{"A": "1"},
		},
		{
			name:    "proxy variables are kept without the marker",
			exports: []string{"HTTPS_PROXY=http://p", "NO_PROXY=localhost"},
			wantEnv: map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "localhost"},
		},
		{
			name:    "multibyte state and values",
			noise:   "noise\n",
			recs:    []record{{kind: "alias", name: "é", payload: "echo 日本"}},
			exports: []string{"GREETING=héllo 🌍"},
			wantEnv: map[string]string{"GREETING": "héllo 🌍"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := captureOutput(testNonce, "bash", tt.noise, tt.recs, tt.exports...)
			snap, recs := mustParse(t, in, nil)
			if want := captureOutput(testNonce, "bash", "", tt.recs); snap.StateBytes != len(want)-1 {
				t.Errorf("parseCapture(%q).StateBytes = %d, want %d (%q)", in, snap.StateBytes, len(want)-1, want)
			}
			if len(recs) != len(tt.recs) || len(recs) > 0 && !slices.Equal(recs, tt.recs) {
				t.Errorf("parseCapture(%q) records = %q, want %q", in, recs, tt.recs)
			}
			if !maps.Equal(snap.Env, tt.wantEnv) {
				t.Errorf("parseCapture(%q).Env = %v, want %v", in, snap.Env, tt.wantEnv)
			}
		})
	}
}
