//go:build !unix

package main

import "os"

// resizeSignals are none where no signal says a terminal's size changed:
// the process's terminal takes this one's size once, when attached.
func resizeSignals() []os.Signal { return nil }
