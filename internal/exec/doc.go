// Package exec runs commands as supervised process groups: it starts a child in a
// group of its own, feeds its stdin, collects its output, ends it on a timeout, on a
// client's request or on shutdown (SIGTERM to the group, then SIGKILL after a grace
// period), and reports an honest ending. It knows nothing of HTTP.
package exec
