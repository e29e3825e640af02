// Package envpolicy decides which environment variables a child process sees. A
// Policy starts from some or all of the server's variables (Inherit), drops the
// default secret-looking names and the Exclude patterns, overlays Set, keeps only the
// IncludeOnly patterns when there are any, and finally drops the names no child may
// ever see. ApplyToSnapshot re-applies the same filters, with inheritance forced to
// all, to the variables a login shell exported. Patterns are anchored, ASCII
// case-insensitive wildcards ('*' and '?'; see Match).
//
// The package is pure: it reads no process environment and knows nothing of HTTP.
package envpolicy
