//go:build !linux

package linuxonly

var _ int = "snapexec's server runs on Linux only (it needs the subreaper, process groups and Landlock); the client and the CLI build anywhere: see the README"
