// Package linuxonly stops a build of the server for another system with one
// clear error instead of a screen of undefined unix names: the packages that
// need Linux (process groups and the subreaper, signal masks, Landlock,
// network namespaces) import it, so the compiler stops here before it
// reaches them. The client and the CLI do not import it and build anywhere.
package linuxonly
