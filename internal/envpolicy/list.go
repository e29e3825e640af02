package envpolicy

import (
	"sort"
	"strings"
)

// List turns vars into NAME=VALUE pairs sorted by name, never nil: an os/exec
// Cmd with a nil Env would inherit the server's whole environment.
func List(vars map[string]string) []string {
	list := make([]string, 0, len(vars))
	for k, v := range vars {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}

// FromList turns NAME=VALUE pairs into a map; a later pair wins, and pairs
// without '=' or with an empty name are skipped.
func FromList(list []string) map[string]string {
	vars := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			vars[k] = v
		}
	}
	return vars
}
