// Package service is the layer the HTTP handlers call: it turns one request into
// an environment (envpolicy), an optional shell-snapshot replay (shellsnap) and a
// supervised process (exec), and it owns the long-lived state those need.
//
// It validates what a request asks for against its Limits (the Validate methods
// of its inputs) and applies the policy a request leaves open (default
// timeouts, how long a stdin write may wait). It performs every operation on a
// process by id and returns values, never an *exec.Process: each process it
// started is shown with its record (the argv its client gave, the receipt of
// its snapshot request), which it keeps beside exec's table exactly as long as
// the table lists the process.
package service
