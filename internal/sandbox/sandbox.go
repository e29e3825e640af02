package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is what every *UnavailableError matches with errors.Is.
var ErrUnavailable = errors.New("sandbox cannot be enforced")

// UnavailableError refuses a policy the kernel or the server's privileges
// cannot enforce. Nothing was started.
type UnavailableError struct {
	// Missing names each thing the policy needs and the server lacks.
	Missing []string
}

// Error names what is missing.
func (e *UnavailableError) Error() string {
	return ErrUnavailable.Error() + ": missing " + strings.Join(e.Missing, "; ")
}

// Is matches ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// The report types.
const (
	// TypeLandlock says the command ran confined by Landlock (and a network
	// namespace, as its policy asked).
	TypeLandlock = "landlock"
	// TypeNone says the command ran unconfined: its policy confined nothing.
	TypeNone = "none"
)

// Report is how a command was confined (the wire answer's sandbox).
type Report struct {
	// Type is TypeLandlock or TypeNone.
	Type string
	// ABI is the Landlock ABI the kernel enforced with; 0 with TypeNone.
	ABI int
	// ReadOnlyMounts says that everything outside the writable roots was
	// also mounted read-only for the command, so that no metadata changed
	// there either (confineMounts); false when the filesystem was not
	// confined, or the server cannot make mount namespaces.
	ReadOnlyMounts bool
}

// Options configure a Sandbox.
type Options struct {
	// Probe reports what the kernel and the server support; nil means Probe.
	// Tests simulate an older kernel with it.
	Probe func() Support
	// LoopbackPool is how many fresh loopback namespaces are kept ready for
	// network "loopback"; 0 means 2.
	LoopbackPool int
	// Private lists the server's own directories that no writable root of a
	// request may be, contain or lie beneath (Admit): the shell state other
	// commands run is kept there, so that a command that could write there
	// could run code outside its sandbox.
	Private []string
}

// Sandbox starts commands confined by a Policy. It is safe for concurrent use.
type Sandbox struct {
	support Support
	// none is the one namespace of every network "none" command: with no
	// interface up and no capability to bring one up or move one in, it
	// carries nothing, so that sharing it costs commands nothing and gives
	// them no channel (Landlock scopes abstract Unix sockets to a sandbox).
	none *os.File
	// ipc is the one IPC namespace of every sandboxed command: none of the
	// host's System V objects or message queues are there. A namespace of
	// each command's own cost 0.2 to 0.4 ms a spawn, and its teardown
	// more; sandboxed commands may meet each other in this one, as they
	// may through a writable root they share. nil when IPCErr.
	ipc      *os.File
	loopback *netnsPool
	private  []string // Options.Private, symbolic links resolved
}

// New probes the kernel and prepares the shared network namespace.
func New(opts Options) *Sandbox {
	probe := opts.Probe
	if probe == nil {
		probe = Probe
	}
	size := opts.LoopbackPool
	if size <= 0 {
		size = 2
	}
	s := &Sandbox{support: probe(), loopback: newNetnsPool(size), private: resolved(opts.Private)}
	if s.support.NetnsErr == nil {
		var err error
		if s.none, err = newNetns(false); err != nil {
			s.support.NetnsErr = err
		}
	}
	if s.support.MountErr == nil {
		s.support.MountErr = onThrowawayThread(func() error { return confineMounts(nil, true, nil) })
	}
	if s.support.MountErr == nil && s.support.DevptsErr == nil {
		s.support.DevptsErr = onThrowawayThread(func() error {
			pts, err := newDevpts()
			if err != nil {
				return err
			}
			defer pts.Close()
			return confineMounts(nil, false, pts)
		})
	}
	if s.support.IPCErr == nil {
		s.support.IPCErr = onThrowawayThread(func() error {
			if err := unix.Unshare(unix.CLONE_NEWIPC); err != nil {
				return err
			}
			var err error
			s.ipc, err = os.Open("/proc/thread-self/ns/ipc")
			return err
		})
	}
	return s
}

// Close releases the namespaces the sandbox holds. Commands already started
// keep theirs.
func (s *Sandbox) Close() error {
	s.loopback.close()
	if s.ipc != nil {
		s.ipc.Close()
	}
	if s.none != nil {
		return s.none.Close()
	}
	return nil
}

// Support returns what the sandbox found it can enforce.
func (s *Sandbox) Support() Support { return s.support }

// Check reports whether p is well formed, its writable roots directories (a
// *FieldError), and whether it is enforceable (an *UnavailableError). A zero
// policy always is.
func (s *Sandbox) Check(p Policy) error {
	if err := s.enforceable(p); err != nil || p.IsZero() {
		return err
	}
	return checkRoots(p)
}

// enforceable is Check but for the roots on the filesystem, which a spawn
// checks as it opens them (openRoots).
func (s *Sandbox) enforceable(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.IsZero() {
		return nil
	}
	if missing := s.support.missing(p); len(missing) > 0 {
		return &UnavailableError{Missing: missing}
	}
	return nil
}

// Admit is Check for a policy a request asked for: it also refuses a
// writable root that is, contains or lies beneath one of the server's
// private directories (Options.Private), as a *FieldError. The roots the
// server adds itself for a command (Policy.WithWritable) pass only Check.
func (s *Sandbox) Admit(p Policy) error {
	if err := s.Check(p); err != nil {
		return err
	}
	for i, r := range resolved(p.WritableRoots) {
		if err := s.refusePrivate(i, r); err != nil {
			return err
		}
	}
	return nil
}

// refusePrivate refuses the request's writable root i, which lies at path
// (links resolved), when it is, holds or lies beneath a private directory.
func (s *Sandbox) refusePrivate(i int, path string) error {
	for _, dir := range s.private {
		if within(dir, path) || within(path, dir) {
			return &FieldError{
				Field:  fmt.Sprintf("sandbox.writableRoots[%d]", i),
				Reason: fmt.Sprintf("reaches %s, where the server keeps the shell state that other commands run: a command that could write there could run code outside its sandbox; list a narrower root", dir),
			}
		}
	}
	return nil
}

// root is a writable root opened for one spawn (openRoots): from its check
// on, the Landlock rule and the mount take the directory fd holds, never
// the path again, so that a symbolic link swapped after the check (by the
// command before, or by a profile its capture runs) changes nothing. path
// is where the directory lay when it was opened, links resolved.
type root struct {
	fd   int
	path string
}

// openRoots opens p's writable roots for a spawn and refuses, as Admit
// does, a request's root that is, holds or lies beneath a private directory
// now: Admit saw the roots when the request came, and a session's later
// commands, or a capture, spawn under the same policy. A root missing or
// not a directory is a *FieldError too. The caller closes them (closeRoots).
func (s *Sandbox) openRoots(p Policy) ([]root, error) {
	var roots []root
	for i, dir := range p.roots() {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeRoots(roots)
			return nil, rootError(i, errors.Is(err, unix.ENOTDIR))
		}
		roots = append(roots, root{fd: fd})
		path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err == nil && !filepath.IsAbs(path) {
			err = fmt.Errorf("%s lies at %q", dir, path) // deleted, or out of this namespace
		}
		if err == nil && i < len(p.WritableRoots) {
			err = s.refusePrivate(i, path)
		}
		if err != nil {
			closeRoots(roots)
			return nil, err
		}
		roots[len(roots)-1].path = path
	}
	return roots, nil
}

// closeRoots closes what openRoots opened.
func closeRoots(roots []root) {
	for _, r := range roots {
		unix.Close(r.fd)
	}
}

// within reports whether path is dir or beneath it; both are clean and
// absolute.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// resolved returns dirs with their symbolic links resolved, as Landlock
// resolves a root; a directory that cannot be resolved stays as given.
func resolved(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, dir := range dirs {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		out[i] = filepath.Clean(dir)
	}
	return out
}

// Start starts cmd confined by p and reports how. A zero policy starts cmd
// as it is. A command that gets a devpts of its own (ownDevpts) gets pts,
// from which its terminal was opened (Devpts), or a fresh one when pts is
// nil; pts is not used otherwise. On any error nothing was started: a
// malformed policy or a missing writable root is a *FieldError, an
// unenforceable one an *UnavailableError, and cmd.Start's own error is
// returned as it is.
//
// cmd must not set SysProcAttr.Pdeathsig: the thread that forks the child
// ends right after, and with it the parent that signal watches.
func (s *Sandbox) Start(p Policy, cmd *exec.Cmd, pts *Devpts) (Report, error) {
	if err := s.enforceable(p); err != nil {
		return Report{}, err
	}
	if p.IsZero() {
		return Report{Type: TypeNone}, cmd.Start()
	}
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0 {
		return Report{}, errors.New("sandbox: Pdeathsig would fire when the forking thread ends")
	}
	roots, err := s.openRoots(p)
	if err != nil {
		return Report{}, err
	}
	defer closeRoots(roots)
	switch {
	case !s.ownDevpts(p):
		pts = nil
	case pts == nil:
		if pts, err = newDevpts(); err != nil {
			return Report{}, err
		}
		defer pts.Close() // the child holds it from here on
	}
	fd, err := rulesetOf(p, roots, pts).open()
	if err != nil {
		return Report{}, err
	}
	defer unix.Close(fd)
	var netns *os.File
	switch p.network() {
	case NetworkNone:
		netns = s.none
	case NetworkLoopback:
		if netns, err = s.loopback.take(); err != nil {
			return Report{}, fmt.Errorf("loopback namespace: %w", err)
		}
		defer netns.Close() // the child holds the namespace from here on
	}
	// With / among the roots nothing lies outside them: no mount to make
	// read-only.
	mounts := p.confinesFiles() && s.support.MountErr == nil &&
		!slices.ContainsFunc(roots, func(r root) bool { return r.path == "/" })
	// net_bind_service acts on the command's own network, but with the
	// host's that is binding the host's privileged ports.
	drop := s.support.DropCaps
	if p.network() == NetworkFull && len(drop) > 0 {
		drop = append(slices.Clip(drop), unix.CAP_NET_BIND_SERVICE)
	}
	if err := onThrowawayThread(func() error { return s.startConfined(cmd, fd, netns, mounts, roots, pts, drop) }); err != nil {
		return Report{}, err
	}
	return Report{Type: TypeLandlock, ABI: s.support.LandlockABI, ReadOnlyMounts: mounts}, nil
}

// onThrowawayThread runs f on a thread of its own that ends with it, and
// returns its error: the thread stays locked, so that the runtime ends it
// rather than run anything else with what f did to it.
func onThrowawayThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked
		errc <- f()
	}()
	return <-errc
}

// startConfined confines the calling thread and starts cmd from it; with
// mounts, everything but roots is mounted read-only for it; drop are the
// capabilities it loses. It runs on a
// throwaway thread (onThrowawayThread).
func (s *Sandbox) startConfined(cmd *exec.Cmd, rulesetFD int, netns *os.File, mounts bool, roots []root, pts *Devpts, drop []uintptr) error {
	// The order matters: joining or making a namespace and dropping
	// capabilities need the capabilities that are dropped, and Landlock comes
	// last so that none of the above is refused by it.
	if netns != nil {
		if err := unix.Setns(int(netns.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
	}
	if mounts || pts != nil {
		if err := confineMounts(roots, mounts, pts); err != nil {
			return err
		}
	}
	// System V IPC and POSIX message queues away from the host's, which
	// would let the command write other processes' shared memory whatever
	// its policy (Sandbox.ipc).
	if s.ipc != nil {
		if err := unix.Setns(int(s.ipc.Fd()), unix.CLONE_NEWIPC); err != nil {
			return fmt.Errorf("setns(CLONE_NEWIPC): %w", err)
		}
	}
	for _, c := range drop {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("dropping capability %d: %w", c, err)
		}
	}
	if err := dropInheritable(drop); err != nil {
		return err
	}
	// Ambient capabilities would survive execve even for a non-root child.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	// no_new_privs: no setuid bit or file capability gives the child back
	// what it lost; Landlock also requires it of a thread without
	// CAP_SYS_ADMIN.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := landlockRestrictSelf(rulesetFD); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	// The child restores the forking thread's signal mask, and a fresh
	// thread has the one the server started with: emptied, since this
	// thread ends after the fork, so that the child starts with no signal
	// blocked whatever the server inherited.
	var empty unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil); err != nil {
		return fmt.Errorf("signal mask: %w", err)
	}
	return cmd.Start()
}

// dropInheritable takes caps out of the thread's inheritable set, which
// execve would otherwise combine with a file's inheritable capabilities.
func dropInheritable(caps []uintptr) error {
	if len(caps) == 0 {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, c := range caps {
		data[c/32].Inheritable &^= 1 << (c % 32)
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
