package envpolicy

import (
	"maps"
	"testing"
)

func TestApply(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		vars   map[string]string
		want   map[string]string
	}{
		{
			name: "zero policy inherits all",
			vars: map[string]string{"PATH": "/bin", "SDKROOT": "/sdk"},
			want: map[string]string{"PATH": "/bin", "SDKROOT": "/sdk"},
		},
		{
			name:   "inherit all",
			policy: Policy{Inherit: InheritAll},
			vars:   map[string]string{"PATH": "/bin", "SDKROOT": "/sdk"},
			want:   map[string]string{"PATH": "/bin", "SDKROOT": "/sdk"},
		},
		{
			name:   "inherit none",
			policy: Policy{Inherit: InheritNone},
			vars:   map[string]string{"PATH": "/bin", "SDKROOT": "/sdk"},
			want:   map[string]string{},
		},
		{
			name:   "inherit core",
			policy: Policy{Inherit: InheritCore},
			vars:   map[string]string{"PATH": "/bin", "HOME": "/h", "SDKROOT": "/sdk"},
			want:   map[string]string{"PATH": "/bin", "HOME": "/h"},
		},
		{
			name:   "inherit core drops near-miss names",
			policy: Policy{Inherit: InheritCore},
			vars: map[string]string{
				"PATHS": "", "XPATH": "", "LC_ALLX": "", "LC_MESSAGES": "", "USERNAME": "", "TEMPDIR": "", "SHELLOPTS": "",
			},
			want: map[string]string{},
		},
		{
			name:   "unknown inherit inherits nothing",
			policy: Policy{Inherit: "some", Set: map[string]string{"A": "1"}},
			vars:   map[string]string{"PATH": "/bin"},
			want:   map[string]string{"A": "1"},
		},
		{
			name: "nil vars",
			want: map[string]string{},
		},
		{
			name:   "exclude exact",
			policy: Policy{Exclude: []string{"PROFILE_DENIED"}},
			vars:   map[string]string{"PROFILE_DENIED": "d", "PROFILE_ALLOWED": "a"},
			want:   map[string]string{"PROFILE_ALLOWED": "a"},
		},
		{
			name:   "exclude is anchored",
			policy: Policy{Exclude: []string{"PATH"}},
			vars:   map[string]string{"PATH": "/bin", "XPATH": "x", "PATHS": "p"},
			want:   map[string]string{"XPATH": "x", "PATHS": "p"},
		},
		{
			name:   "exclude is case-insensitive",
			policy: Policy{Exclude: []string{"aws_*"}},
			vars:   map[string]string{"AWS_REGION": "eu", "Aws_Profile": "p", "AWSREGION": "kept"},
			want:   map[string]string{"AWSREGION": "kept"},
		},
		{
			name:   "any exclude pattern drops",
			policy: Policy{Exclude: []string{"A", "B?"}},
			vars:   map[string]string{"A": "", "B1": "", "B": "kept"},
			want:   map[string]string{"B": "kept"},
		},
		{
			name:   "set adds and overwrites",
			policy: Policy{Set: map[string]string{"NEW": "n", "PATH": "/set"}},
			vars:   map[string]string{"PATH": "/bin"},
			want:   map[string]string{"NEW": "n", "PATH": "/set"},
		},
		{
			name:   "set adds under inherit none",
			policy: Policy{Inherit: InheritNone, Set: map[string]string{"A": "1"}},
			vars:   map[string]string{"B": "2"},
			want:   map[string]string{"A": "1"},
		},
		{
			name:   "set is not checked by default excludes",
			policy: Policy{Set: map[string]string{"MY_TOKEN": "x"}},
			vars:   map[string]string{"OTHER_TOKEN": "y"},
			want:   map[string]string{"MY_TOKEN": "x"},
		},
		{
			name:   "set is not checked by exclude",
			policy: Policy{Exclude: []string{"MY_*"}, Set: map[string]string{"MY_VAR": "set"}},
			vars:   map[string]string{"MY_OTHER": "o"},
			want:   map[string]string{"MY_VAR": "set"},
		},
		{
			name:   "exclude then set re-adds",
			policy: Policy{Exclude: []string{"FOO"}, Set: map[string]string{"FOO": "new"}},
			vars:   map[string]string{"FOO": "old"},
			want:   map[string]string{"FOO": "new"},
		},
		{
			name:   "default exclude then set re-adds",
			policy: Policy{Set: map[string]string{"API_KEY": "new"}},
			vars:   map[string]string{"API_KEY": "old"},
			want:   map[string]string{"API_KEY": "new"},
		},
		{
			name:   "includeOnly keeps matches",
			policy: Policy{IncludeOnly: []string{"PROFILE_*", "PATH"}},
			vars:   map[string]string{"PROFILE_A": "a", "PATH": "/bin", "PWD": "/tmp"},
			want:   map[string]string{"PROFILE_A": "a", "PATH": "/bin"},
		},
		{
			name:   "includeOnly is case-insensitive",
			policy: Policy{IncludeOnly: []string{"path"}},
			vars:   map[string]string{"PATH": "/bin", "Path": "/b", "PWD": "/tmp"},
			want:   map[string]string{"PATH": "/bin", "Path": "/b"},
		},
		{
			name:   "includeOnly is anchored",
			policy: Policy{IncludeOnly: []string{"PATH"}},
			vars:   map[string]string{"PATH": "/bin", "MANPATH": "/man", "PATHEXT": ".exe"},
			want:   map[string]string{"PATH": "/bin"},
		},
		{
			name:   "empty includeOnly keeps all",
			policy: Policy{IncludeOnly: []string{}},
			vars:   map[string]string{"PATH": "/bin", "PWD": "/tmp"},
			want:   map[string]string{"PATH": "/bin", "PWD": "/tmp"},
		},
		{
			name:   "includeOnly after set cuts set",
			policy: Policy{Set: map[string]string{"MY_TOKEN": "x", "PATH": "/set"}, IncludeOnly: []string{"PATH"}},
			vars:   map[string]string{"PATH": "/bin", "HOME": "/h"},
			want:   map[string]string{"PATH": "/set"},
		},
		{
			name:   "includeOnly does not bring back excluded",
			policy: Policy{Exclude: []string{"HOME"}, IncludeOnly: []string{"HOME", "*TOKEN"}},
			vars:   map[string]string{"HOME": "/h", "GH_TOKEN": "t"},
			want:   map[string]string{},
		},
		{
			name:   "ignore default excludes",
			policy: Policy{IgnoreDefaultExcludes: true},
			vars:   map[string]string{"GH_TOKEN": "t", "API_KEY": "k", "MY_SECRET": "s"},
			want:   map[string]string{"GH_TOKEN": "t", "API_KEY": "k", "MY_SECRET": "s"},
		},
		{
			name:   "ignore default excludes still applies exclude",
			policy: Policy{IgnoreDefaultExcludes: true, Exclude: []string{"*_KEY"}},
			vars:   map[string]string{"GH_TOKEN": "t", "API_KEY": "k"},
			want:   map[string]string{"GH_TOKEN": "t"},
		},
		{
			name:   "never-inherited dropped even with ignore default excludes",
			policy: Policy{IgnoreDefaultExcludes: true},
			vars: map[string]string{
				"NODE_REPL_AUTH_TOKEN": "t", "openai_federation_rule_id": "r", "OPENAI_WORKLOAD_IDENTITY_CONTEXT": "c",
				"CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE": "1", "SNAPEXEC_TOKEN": "s", "PATH": "/bin",
			},
			want: map[string]string{"PATH": "/bin"},
		},
		{
			name: "set cannot reintroduce never-inherited",
			policy: Policy{IgnoreDefaultExcludes: true, Set: map[string]string{
				"SNAPEXEC_TOKEN": "x", "Snapexec_Token_File": "/f", "CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE": "1", "OK": "ok",
			}},
			want: map[string]string{"OK": "ok"},
		},
		{
			name:   "includeOnly cannot keep never-inherited",
			policy: Policy{IgnoreDefaultExcludes: true, IncludeOnly: []string{"*"}},
			vars:   map[string]string{"OPENAI_IDENTITY_TOKEN_FILE": "/f", "A": "a"},
			want:   map[string]string{"A": "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Apply(tt.policy, tt.vars)
			if got == nil || !maps.Equal(got, tt.want) {
				t.Errorf("Apply(%+v, %v) = %#v, want %v", tt.policy, tt.vars, got, tt.want)
			}
		})
	}
}

// TestApplyDefaultExcludes checks near-miss names against *KEY*, *SECRET* and
// *TOKEN*: a name is dropped when it contains one of the words anywhere, in any
// case, and kept otherwise; IgnoreDefaultExcludes keeps every one.
func TestApplyDefaultExcludes(t *testing.T) {
	tests := []struct {
		name     string
		wantKept bool
	}{
		{"KEY", false},
		{"MONKEY", false},
		{"KEYBOARD", false},
		{"OPENAI_API_KEY", false},
		{"mykeyring", false},
		{"github_token", false},
		{"GH_TOKEN", false},
		{"TOKENIZER", false},
		{"SECRET", false},
		{"SECRETARY", false},
		{"AWS_SECRET_ACCESS_KEY", false},
		{"Client_Secret", false},
		{"KY", true},
		{"KE_Y", true},
		{"K_E_Y", true},
		{"TOKE", true},
		{"TOKEM", true},
		{"SECRE", true},
		{"SECR3T", true},
		{"PASSWORD", true},
		{"SSH_AUTH_SOCK", true},
		{"PATH", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{tt.name: "v"}
			_, kept := Apply(Policy{}, vars)[tt.name]
			if kept != tt.wantKept {
				t.Errorf("Apply(Policy{}, %v) kept %s = %v, want %v", vars, tt.name, kept, tt.wantKept)
			}
			p := Policy{IgnoreDefaultExcludes: true}
			if _, kept := Apply(p, vars)[tt.name]; !kept {
				t.Errorf("Apply(%+v, %v) kept %s = false, want true", p, vars, tt.name)
			}
		})
	}
}

// TestApplyCore runs the core names, in mixed case, and a non-core name under each
// inherit mode.
func TestApplyCore(t *testing.T) {
	core := map[string]string{
		"Path": "/bin", "SHELL": "/bin/sh", "tmpdir": "/t", "TEMP": "/t", "Tmp": "/t", "HOME": "/h",
		"LANG": "C", "lc_all": "C", "LC_CTYPE": "C", "LogName": "me", "USER": "me",
	}
	vars := maps.Clone(core)
	vars["SDKROOT"] = "/sdk"
	tests := []struct {
		name    string
		inherit Inherit
		want    map[string]string
	}{
		{"zero", "", vars},
		{"all", InheritAll, vars},
		{"core", InheritCore, core},
		{"none", InheritNone, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Inherit: tt.inherit}
			if got := Apply(p, vars); !maps.Equal(got, tt.want) {
				t.Errorf("Apply(%+v, %v) = %v, want %v", p, vars, got, tt.want)
			}
		})
	}
}

func TestApplyDoesNotModifyInputs(t *testing.T) {
	vars := map[string]string{"PATH": "/bin", "GH_TOKEN": "t", "SNAPEXEC_TOKEN": "s"}
	set := map[string]string{"PATH": "/set", "SNAPEXEC_TOKEN": "x"}
	wantVars, wantSet := maps.Clone(vars), maps.Clone(set)
	got := Apply(Policy{Set: set, IncludeOnly: []string{"HOME"}}, vars)
	got["NEW"] = "n"
	if !maps.Equal(vars, wantVars) {
		t.Errorf("Apply changed vars to %v, want %v", vars, wantVars)
	}
	if !maps.Equal(set, wantSet) {
		t.Errorf("Apply changed Set to %v, want %v", set, wantSet)
	}
}

// TestSeedFiltersProfileExportsAfterCapture is seed case 11.2
// (snapshot_filters_profile_exports_after_capture) at the policy level; the PWD
// removal belongs to the snapshot parser.
func TestSeedFiltersProfileExportsAfterCapture(t *testing.T) {
	p := Policy{
		Inherit:     InheritAll,
		Exclude:     []string{"PROFILE_DENIED"},
		Set:         map[string]string{"PROFILE_ALLOWED": "override"},
		IncludeOnly: []string{"PROFILE_*"},
	}
	vars := map[string]string{
		"PROFILE_ALLOWED": "profile",
		"PROFILE_DENIED":  "denied",
		"PROFILE_SECRET":  "secret",
		"PWD":             "/tmp",
	}
	want := map[string]string{"PROFILE_ALLOWED": "override"}
	if got := ApplyToSnapshot(p, vars); !maps.Equal(got, want) {
		t.Errorf("ApplyToSnapshot(%+v, %v) = %v, want %v", p, vars, got, want)
	}
}

// TestSeedPreservesProfileExportsWithRestrictiveInheritance is seed case 11.3
// (snapshot_preserves_profile_exports_with_restrictive_inheritance): the snapshot
// ignores a restrictive Inherit, which Apply would honour.
func TestSeedPreservesProfileExportsWithRestrictiveInheritance(t *testing.T) {
	vars := map[string]string{
		"PROFILE_ALLOWED": "profile",
		"SDKROOT":         "/sdk",
		"PROFILE_SECRET":  "secret",
		"PROFILE_DENIED":  "denied",
	}
	for _, inherit := range []Inherit{InheritNone, InheritCore} {
		t.Run(string(inherit), func(t *testing.T) {
			p := Policy{Inherit: inherit, Exclude: []string{"PROFILE_DENIED"}}
			want := map[string]string{"PROFILE_ALLOWED": "profile", "SDKROOT": "/sdk"}
			if got := ApplyToSnapshot(p, vars); !maps.Equal(got, want) {
				t.Errorf("ApplyToSnapshot(%+v, %v) = %v, want %v", p, vars, got, want)
			}
			if got := Apply(p, vars); len(got) != 0 {
				t.Errorf("Apply(%+v, %v) = %v, want map[]", p, vars, got)
			}
		})
	}
}
