package envpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Inherit says which of the server's variables a policy starts from.
type Inherit string

// The inherit modes of the wire enum.
const (
	// InheritAll starts from every variable.
	InheritAll Inherit = "all"
	// InheritCore starts from the core variables only: PATH, SHELL, TMPDIR, TEMP,
	// TMP, HOME, LANG, LC_ALL, LC_CTYPE, LOGNAME and USER, compared
	// case-insensitively.
	InheritCore Inherit = "core"
	// InheritNone starts from no variables.
	InheritNone Inherit = "none"
)

// Policy is an environment policy (the wire ExecEnvPolicy). The zero value inherits
// every variable and drops only the default excludes and the never-inherited names.
type Policy struct {
	// Inherit selects the starting variables; "" means InheritAll.
	Inherit Inherit
	// IgnoreDefaultExcludes keeps the names matching *KEY*, *SECRET* and *TOKEN*,
	// which are dropped otherwise.
	IgnoreDefaultExcludes bool
	// Exclude lists patterns whose matching names are dropped before Set applies.
	Exclude []string
	// Set inserts or overwrites variables after the excludes, which do not see them.
	Set map[string]string
	// IncludeOnly, when non-empty, lists patterns that every surviving name,
	// including a name from Set, must match.
	IncludeOnly []string
}

// FieldError reports a malformed field of a policy or of a variable map.
type FieldError struct {
	// Field names the field, like envPolicy.exclude[2] or env["A=B"].
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error returns the field and the reason.
func (e *FieldError) Error() string {
	return e.Field + ": " + e.Reason
}

// Validate reports the first malformed field of p as a *FieldError, in wire order:
// an unknown inherit mode, an Exclude pattern containing NUL, a Set name that is
// empty or contains '=' or NUL or a Set value containing NUL (names in sorted
// order), an IncludeOnly pattern containing NUL.
func (p Policy) Validate() error {
	switch p.Inherit {
	case "", InheritAll, InheritCore, InheritNone:
	default:
		return &FieldError{
			Field:  "envPolicy.inherit",
			Reason: fmt.Sprintf("unknown value %q; want all, core or none", string(p.Inherit)),
		}
	}
	if err := validatePatterns("envPolicy.exclude", p.Exclude); err != nil {
		return err
	}
	if err := ValidateVars("envPolicy.set", p.Set); err != nil {
		return err
	}
	return validatePatterns("envPolicy.includeOnly", p.IncludeOnly)
}

// ValidateVars checks a plain variable map, such as a request's env, and reports
// the first bad entry (names in sorted order) as a *FieldError whose Field is
// prefix["NAME"]: an empty name, a name containing '=' or NUL, or a value
// containing NUL. None of these can be passed to a process.
func ValidateVars(prefix string, vars map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		reason := ""
		switch {
		case name == "":
			reason = "name is empty"
		case strings.ContainsRune(name, '='):
			reason = "name contains '='"
		case strings.ContainsRune(name, 0):
			reason = "name contains NUL"
		case strings.ContainsRune(vars[name], 0):
			reason = "value contains NUL"
		default:
			continue
		}
		return &FieldError{Field: fmt.Sprintf("%s[%q]", prefix, name), Reason: reason}
	}
	return nil
}

func validatePatterns(field string, patterns []string) error {
	for i, pattern := range patterns {
		if strings.ContainsRune(pattern, 0) {
			return &FieldError{Field: fmt.Sprintf("%s[%d]", field, i), Reason: "pattern contains NUL"}
		}
	}
	return nil
}
