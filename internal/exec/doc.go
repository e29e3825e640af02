// Package exec runs commands as supervised process groups: it starts a child in a
// group of its own, feeds its stdin, collects its output, ends it on a timeout, on a
// client's request or on shutdown (SIGTERM to the group, then SIGKILL after a grace
// period), and reports an honest ending. It knows nothing of HTTP.
//
// A Manager keeps one table of the processes it started, by Start and Run alike:
// running ones, and finished ones for a while after they end, within bounds on
// their number and retained output. Each process keeps its recent output in a ring
// of chunks that share one seq counter across stdout and stderr; Read long-polls it
// and resumes from any seq still retained. The processes a caller keeps to itself
// (Spawn, Hold: snapshot captures, standby shells) are unlisted: the manager ends
// them like any other but they are not in its table.
//
// The Reaper is the process-wide side: the child subreaper that reaps orphans and
// finds the processes that escaped their group, the Keeper that ends everything if
// the server is killed, and children that start with default signals whatever the
// server inherited.
package exec

// This package needs Linux; on another system the import stops the build
// with one clear error.
import _ "github.com/snapexec/snapexec/internal/linuxonly"
