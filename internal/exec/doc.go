// Package exec runs commands as supervised process groups: it starts a child in a
// group of its own, feeds its stdin, collects its output, ends it on a timeout, on a
// client's request or on shutdown (SIGTERM to the group, then SIGKILL after a grace
// period), and reports an honest ending. It knows nothing of HTTP.
//
// A Manager keeps one table of the processes it started, by Start and Run
// alike: running ones, and finished ones for a while after they end, within
// bounds on their number and retained output. Each process keeps its recent
// output in a ring of chunks that share one seq counter across stdout and
// stderr; Read long-polls it and resumes from any seq still retained.
package exec
