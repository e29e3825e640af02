// Package files serves file operations bounded by roots, for clients that
// should not have to run a shell to read or write a file.
//
// Every path is absolute and addressed to the root that contains it; it is
// cleaned lexically (so "/r/a/../b" is "/r/b", as in a URL) and then resolved
// by the kernel beneath an open handle on the root (os.Root: component by
// component with O_NOFOLLOW), so that no "..", symlink or rename between a
// check and its use reaches outside. A symlink inside a root is followed when
// it stays inside, relatively; an absolute symlink, even one naming a place
// inside the root, is refused as outside.
//
// A hard link inside a root to a file outside is the same inode, and nothing
// can tell it apart from a file of the root's own: reading it reads that
// inode. Writing never changes it: a write replaces the directory entry with
// a new file (a temporary file renamed over it), so the file outside keeps its
// content.
//
// Errors match the sentinels of errors.go with errors.Is and wrap their cause,
// which is for logs.
package files
