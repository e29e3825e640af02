//go:build unix

package main

import (
	"os"
	"syscall"
)

// resizeSignals are the signals that say this terminal's size changed.
func resizeSignals() []os.Signal { return []os.Signal{syscall.SIGWINCH} }
