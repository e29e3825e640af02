package envpolicy

import "maps"

// Apply returns a new map holding vars filtered by p, in the reference's order
// (docs/design/envpolicy.md#the-steps):
//
//  1. inherit: all of vars, only the core names (see InheritCore), or none;
//  2. unless IgnoreDefaultExcludes, drop the names matching *KEY*, *SECRET* or
//     *TOKEN*;
//  3. drop the names matching an Exclude pattern;
//  4. insert or overwrite the Set pairs, which steps 2 and 3 never see;
//  5. if IncludeOnly is non-empty, keep only the names matching one of its
//     patterns, Set names included;
//  6. drop the never-inherited names (see IsNeverInherited).
//
// Apply modifies neither vars nor p. It expects a valid p (see Policy.Validate); an
// unknown Inherit inherits nothing.
func Apply(p Policy, vars map[string]string) map[string]string {
	env := make(map[string]string)
	for name, value := range vars {
		if inherits(p.Inherit, name) {
			env[name] = value
		}
	}
	if !p.IgnoreDefaultExcludes {
		defaults := []string{"*KEY*", "*SECRET*", "*TOKEN*"}
		maps.DeleteFunc(env, func(name, _ string) bool { return matchAny(defaults, name) })
	}
	maps.DeleteFunc(env, func(name, _ string) bool { return matchAny(p.Exclude, name) })
	maps.Copy(env, p.Set)
	if len(p.IncludeOnly) > 0 {
		maps.DeleteFunc(env, func(name, _ string) bool { return !matchAny(p.IncludeOnly, name) })
	}
	DropNeverInherited(env)
	return env
}

// ApplyToSnapshot is Apply with Inherit forced to InheritAll, for the variables a
// login shell exported during a snapshot capture. Inherit describes what to take
// from the server's environment, which was already decided when the capture shell's
// environment was built; honouring none or core again would erase every variable
// the user's profile exported.
func ApplyToSnapshot(p Policy, vars map[string]string) map[string]string {
	p.Inherit = InheritAll
	return Apply(p, vars)
}

// inherits reports whether mode takes name from the server's environment.
func inherits(mode Inherit, name string) bool {
	switch mode {
	case "", InheritAll:
		return true
	case InheritCore:
		for _, core := range [...]string{
			"PATH", "SHELL", "TMPDIR", "TEMP", "TMP", "HOME",
			"LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "USER",
		} {
			if equalFoldASCII(name, core) {
				return true
			}
		}
	}
	return false
}
