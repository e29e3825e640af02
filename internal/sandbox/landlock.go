package sandbox

import (
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// The access rights a sandbox grants. The handled sets are those of ABI 6,
// MinLandlockABI, so that a ruleset means the same on every kernel that
// enforces it.
const (
	readRights = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	// rootRights is everything beneath a writable root but making device
	// nodes, which would open a disk to raw writes, and device ioctls.
	rootRights = landlock.AccessFSSet(readRights |
		llsys.AccessFSWriteFile | llsys.AccessFSTruncate | llsys.AccessFSRefer |
		llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir |
		llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo |
		llsys.AccessFSMakeSym)
	// deviceRights is what a command needs of /dev/null and its terminals.
	deviceRights = landlock.AccessFSSet(llsys.AccessFSReadFile | llsys.AccessFSWriteFile |
		llsys.AccessFSTruncate | llsys.AccessFSIoctlDev)
)

// checkRoots reports the first writable root of p that is missing or not a
// directory as a *FieldError.
func checkRoots(p Policy) error {
	for i, root := range p.WritableRoots {
		fi, err := os.Stat(root)
		switch {
		case err != nil:
			return &FieldError{Field: fmt.Sprintf("sandbox.writableRoots[%d]", i), Reason: "does not exist"}
		case !fi.IsDir():
			return &FieldError{Field: fmt.Sprintf("sandbox.writableRoots[%d]", i), Reason: "is not a directory"}
		}
	}
	return nil
}

// ruleset builds the Landlock configuration and rules of p. A writable root
// that is missing or not a directory is a *FieldError.
func ruleset(p Policy) (landlock.Config, []landlock.Rule, error) {
	cfg := landlock.Config{Scoped: landlock.V6.Scoped}
	var rules []landlock.Rule
	if p.confinesFiles() {
		cfg.HandledAccessFS = landlock.V6.HandledAccessFS
		if err := checkRoots(p); err != nil {
			return cfg, nil, err
		}
		rules = append(rules,
			landlock.PathAccess(readRights, "/"),
			landlock.PathAccess(deviceRights, "/dev/null", "/dev/tty", "/dev/ptmx").IgnoreIfMissing(),
			landlock.PathAccess(deviceRights|llsys.AccessFSReadDir, "/dev/pts").IgnoreIfMissing(),
		)
		if len(p.WritableRoots) > 0 {
			rules = append(rules, landlock.PathAccess(rootRights, p.WritableRoots...))
		}
	}
	if p.network() == NetworkNone {
		// The namespace already has no way out; TCP rules also hold should a
		// way appear, at no cost.
		cfg.HandledAccessNet = landlock.V6.HandledAccessNet
	}
	return cfg, rules, nil
}
