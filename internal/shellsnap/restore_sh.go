package shellsnap

import "strings"

// shPlan builds the restore of a sh capture, whose state is of the
// reference's format (aliases, umask and set -o options: dash cannot list
// its functions): first the profile's changes to the environment (diffEnv)
// around the request's own, then the state as dash reads it, its options
// last, so that errexit, nounset and xtrace act on the user's command only.
func shPlan(state string, captureEnv, final, kept map[string]string) *restorePlan {
	p := &restorePlan{shell: "sh"}
	var unsets, exports []string
	for _, ch := range diffEnv(captureEnv, final, kept, nil) {
		if ch.op == envUnset {
			unsets = append(unsets, ch.name)
			continue
		}
		value := quote(ch.value)
		if ch.relative {
			value = quote(ch.prefix) + `"${` + ch.name + `-}"` + quote(ch.suffix)
		}
		exports = append(exports, ch.name+"="+value)
	}
	if len(unsets) > 0 {
		p.steps = append(p.steps, step{code: `\unset ` + strings.Join(unsets, " ")})
	}
	if len(exports) > 0 {
		p.steps = append(p.steps, step{code: `\export ` + strings.Join(exports, " ")})
	}
	p.steps = append(p.steps, step{code: state})
	return p
}

// shRender writes the restore file of a sh plan.
func shRender(p *restorePlan) string {
	var b strings.Builder
	for _, s := range p.steps {
		b.WriteString(s.code + "\n")
	}
	return b.String()
}
