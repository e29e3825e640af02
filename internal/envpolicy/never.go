package envpolicy

import "maps"

// IsNeverInherited reports whether name is one that no child may ever see,
// compared ASCII case-insensitively (docs/design/envpolicy.md#never-inherited):
// the reference's non-inheritable names
// CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN, NODE_REPL_AUTH_TOKEN,
// OPENAI_FEDERATION_RULE_ID, OPENAI_IDENTITY_TOKEN_FILE and
// OPENAI_WORKLOAD_IDENTITY_CONTEXT, the exec-server's internal
// CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE, and this server's own auth token variables
// SNAPEXEC_TOKEN and SNAPEXEC_TOKEN_FILE.
//
// Apply removes these names last, after Set, so Set cannot reintroduce them, and
// IgnoreDefaultExcludes cannot keep them.
func IsNeverInherited(name string) bool {
	for _, never := range [...]string{
		"CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN",
		"NODE_REPL_AUTH_TOKEN",
		"OPENAI_FEDERATION_RULE_ID",
		"OPENAI_IDENTITY_TOKEN_FILE",
		"OPENAI_WORKLOAD_IDENTITY_CONTEXT",
		"CODEX_EXEC_SERVER_EXIT_ON_STDIN_CLOSE",
		"SNAPEXEC_TOKEN",
		"SNAPEXEC_TOKEN_FILE",
	} {
		if equalFoldASCII(name, never) {
			return true
		}
	}
	return false
}

// DropNeverInherited deletes from vars, in place, every name for which
// IsNeverInherited reports true. Callers use it on any environment that reaches a
// child without passing through Apply, such as a request's env or a replayed
// snapshot.
func DropNeverInherited(vars map[string]string) {
	maps.DeleteFunc(vars, func(name, _ string) bool { return IsNeverInherited(name) })
}
