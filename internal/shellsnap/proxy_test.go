package shellsnap

import (
	"maps"
	"testing"
)

func TestStripManagedProxy(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want map[string]string
	}{
		{
			name: "every proxy key goes",
			env: map[string]string{
				"CODEX_NETWORK_PROXY_ACTIVE": "1", "CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE": "1",
				"CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS": "[]", "CODEX_NETWORK_ALLOW_LOCAL_BINDING": "1",
				"CODEX_NETWORK_PROXY_ATTRIBUTION": "t", "ELECTRON_GET_USE_PROXY": "1", "NODE_USE_ENV_PROXY": "1",
				"HTTP_PROXY": "p", "HTTPS_PROXY": "p", "http_proxy": "p", "https_proxy": "p",
				"YARN_HTTP_PROXY": "p", "YARN_HTTPS_PROXY": "p",
				"npm_config_http_proxy": "p", "npm_config_https_proxy": "p", "npm_config_proxy": "p",
				"NPM_CONFIG_HTTP_PROXY": "p", "NPM_CONFIG_HTTPS_PROXY": "p", "NPM_CONFIG_PROXY": "p",
				"BUNDLE_HTTP_PROXY": "p", "BUNDLE_HTTPS_PROXY": "p", "PIP_PROXY": "p",
				"DOCKER_HTTP_PROXY": "p", "DOCKER_HTTPS_PROXY": "p",
				"WS_PROXY": "p", "WSS_PROXY": "p", "ws_proxy": "p", "wss_proxy": "p",
				"NO_PROXY": "n", "no_proxy": "n", "npm_config_noproxy": "n", "NPM_CONFIG_NOPROXY": "n",
				"YARN_NO_PROXY": "n", "BUNDLE_NO_PROXY": "n",
				"ALL_PROXY": "p", "all_proxy": "p", "FTP_PROXY": "p", "ftp_proxy": "p",
				"KEEP": "1",
			},
			want: map[string]string{"KEEP": "1"},
		},
		{
			name: "near misses stay",
			env: map[string]string{
				"CODEX_NETWORK_PROXY_ACTIVE": "1",
				"Http_Proxy":                 "p", "HTTP_PROXY_URL": "p", "XHTTP_PROXY": "p", "npm_config_PROXY": "p",
				"CODEX_WINDOWS_SANDBOX_PROXY_PORTS": "1", "GIT_SSH_COMMAND": "CODEX_PROXY_GIT_SSH_COMMAND=1 ssh",
			},
			want: map[string]string{
				"Http_Proxy": "p", "HTTP_PROXY_URL": "p", "XHTTP_PROXY": "p", "npm_config_PROXY": "p",
				"CODEX_WINDOWS_SANDBOX_PROXY_PORTS": "1", "GIT_SSH_COMMAND": "CODEX_PROXY_GIT_SSH_COMMAND=1 ssh",
			},
		},
		{
			name: "CA bundles stay without a MITM proxy",
			env: map[string]string{
				"CODEX_NETWORK_PROXY_ACTIVE": "1",
				"SSL_CERT_FILE":              "/home/u/.codex/proxy/ca-bundle.pem", "NODE_EXTRA_CA_CERTS": "/ca.pem",
			},
			want: map[string]string{"SSL_CERT_FILE": "/home/u/.codex/proxy/ca-bundle.pem", "NODE_EXTRA_CA_CERTS": "/ca.pem"},
		},
		{
			name: "brokered dummies go, changed and unsupported credentials stay",
			env: map[string]string{
				"CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS": `[["GH_TOKEN","dummy-gh"],["GITHUB_TOKEN","dummy-github"],["OPENAI_API_KEY","dummy-openai"],["ANTHROPIC_API_KEY","dummy-anthropic"],["OTHER_TOKEN","dummy-other"],["MISSING_TOKEN","x"]]`,
				"GH_TOKEN":       "dummy-gh",
				"GITHUB_TOKEN":   "real-from-profile",
				"OPENAI_API_KEY": "dummy-openai", "ANTHROPIC_API_KEY": "dummy-anthropic",
				"OTHER_TOKEN": "dummy-other",
			},
			want: map[string]string{"GITHUB_TOKEN": "real-from-profile", "OTHER_TOKEN": "dummy-other"},
		},
		{
			name: "credential keys compare case-sensitively",
			env: map[string]string{
				"CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS": `[["gh_token","d"]]`,
				"gh_token": "d",
			},
			want: map[string]string{"gh_token": "d"},
		},
		{
			name: "malformed marker strips no credential",
			env: map[string]string{
				"CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS": `[["GH_TOKEN","d"]`,
				"GH_TOKEN": "d",
			},
			want: map[string]string{"GH_TOKEN": "d"},
		},
		{
			name: "pairs of the wrong length are ignored",
			env: map[string]string{
				"CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS": `[["GH_TOKEN"],["GITHUB_TOKEN","d","extra"],["OPENAI_API_KEY","d"]]`,
				"GH_TOKEN": "d", "GITHUB_TOKEN": "d", "OPENAI_API_KEY": "d",
			},
			want: map[string]string{"GH_TOKEN": "d", "GITHUB_TOKEN": "d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := maps.Clone(tt.env)
			stripManagedProxy(got)
			if !maps.Equal(got, tt.want) {
				t.Errorf("stripManagedProxy(%v) = %v, want %v", tt.env, got, tt.want)
			}
		})
	}
}
