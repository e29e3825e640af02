package shellsnap

import "encoding/json"

// brokeredCredentialsVar holds the JSON list of [key, dummy] pairs that a
// credential-brokering proxy put into the environment.
const brokeredCredentialsVar = "CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS"

// stripManagedProxy deletes, in place, what a managed network proxy put into a
// captured environment (docs/design/snapshots.md#parse), so that a cached snapshot
// never replays one launch's proxy into another. User-set proxy variables go too:
// under an active proxy they cannot be told apart from the managed ones.
//
// The reference also drops CA-bundle variables that point at its generated MITM
// certificate. This server runs no MITM proxy, so no bundle can be managed and
// those variables are kept.
func stripManagedProxy(env map[string]string) {
	stripBrokeredCredentials(env)
	for name := range env {
		if isProxyEnvKey(name) {
			delete(env, name)
		}
	}
}

// stripBrokeredCredentials deletes each brokered credential whose value is still
// the broker's dummy. A value the profile changed is the user's own and stays, as
// does every pair whose key is not a supported credential key. A marker that is
// not a JSON list of pairs strips nothing.
func stripBrokeredCredentials(env map[string]string) {
	var pairs [][]string
	if err := json.Unmarshal([]byte(env[brokeredCredentialsVar]), &pairs); err != nil {
		return
	}
	for _, pair := range pairs {
		if len(pair) != 2 || !isBrokeredCredentialKey(pair[0]) {
			continue
		}
		if value, ok := env[pair[0]]; ok && value == pair[1] {
			delete(env, pair[0])
		}
	}
}

// isBrokeredCredentialKey reports whether a broker may stand in for name. The
// reference's list is open-ended ("GH_TOKEN, GITHUB_TOKEN, OPENAI_API_KEY, …");
// this port supports GH_TOKEN, GITHUB_TOKEN, OPENAI_API_KEY and ANTHROPIC_API_KEY.
func isBrokeredCredentialKey(name string) bool {
	switch name {
	case "GH_TOKEN", "GITHUB_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY":
		return true
	}
	return false
}

// isProxyEnvKey reports whether name is one of the reference's PROXY_ENV_KEYS,
// compared case-sensitively. CODEX_WINDOWS_SANDBOX_PROXY_PORTS (Windows only) and
// GIT_SSH_COMMAND (macOS only) do not apply to this Linux server.
func isProxyEnvKey(name string) bool {
	switch name {
	case "CODEX_NETWORK_PROXY_ACTIVE",
		"CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE",
		"CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS",
		"CODEX_NETWORK_ALLOW_LOCAL_BINDING",
		"CODEX_NETWORK_PROXY_ATTRIBUTION",
		"ELECTRON_GET_USE_PROXY", "NODE_USE_ENV_PROXY",
		"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
		"YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",
		"npm_config_http_proxy", "npm_config_https_proxy", "npm_config_proxy",
		"NPM_CONFIG_HTTP_PROXY", "NPM_CONFIG_HTTPS_PROXY", "NPM_CONFIG_PROXY",
		"BUNDLE_HTTP_PROXY", "BUNDLE_HTTPS_PROXY", "PIP_PROXY",
		"DOCKER_HTTP_PROXY", "DOCKER_HTTPS_PROXY",
		"WS_PROXY", "WSS_PROXY", "ws_proxy", "wss_proxy",
		"NO_PROXY", "no_proxy", "npm_config_noproxy", "NPM_CONFIG_NOPROXY",
		"YARN_NO_PROXY", "BUNDLE_NO_PROXY",
		"ALL_PROXY", "all_proxy", "FTP_PROXY", "ftp_proxy":
		return true
	}
	return false
}
