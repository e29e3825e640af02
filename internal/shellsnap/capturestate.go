package shellsnap

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/sandbox"
)

// internalEnvPrefix starts the names of the variables this server passes to
// its capture and replay shells, which the restore removes first.
const internalEnvPrefix = "__SNAPEXEC_"

// userBashEnvVar carries the request's BASH_ENV past bash's start-up to the
// capture script and the restore: bash itself runs the file BASH_ENV names
// before anything else, and a replay's BASH_ENV is the restore file.
const userBashEnvVar = internalEnvPrefix + "BASH_ENV"

// userZdotdirVar likewise carries the request's ZDOTDIR: zsh reads its
// startup files from the capture's or the restore's directory.
const userZdotdirVar = internalEnvPrefix + "ZDOTDIR"

// snapshotCapture is one capture of a login shell's state: what the cache
// needs to run it, and what it gives.
type snapshotCapture struct {
	run    Capturer
	files  *restoreFiles
	shell  string
	argv   []string // the launch: [path, "-lc", script, args...]
	cwd    string
	env    map[string]string
	policy *envpolicy.Policy
	// sandbox confines the capture and its validation as it confines the
	// command.
	sandbox sandbox.Policy
	// terminal captures a login terminal's state: an interactive login
	// shell's, in a session of its own (Launch.Terminal).
	terminal bool
}

// capture runs the capture, parses its output and validates it: a second
// shell evaluates every piece and names those it cannot read back, which
// are dropped, and the snapshot says so. It writes the restore files and
// returns the stamps of every file the login shell read.
func (c snapshotCapture) capture(ctx context.Context) (*Snapshot, []fileStamp, error) {
	nonce := randomToken()
	argv, env, err := c.command(nonce)
	if err != nil {
		return nil, nil, &CaptureError{Reason: ReasonSpawnFailed, Message: "cannot capture shell snapshot: " + err.Error()}
	}
	// The startup files are stamped before the capture runs, so that an edit
	// made during it makes the snapshot stale rather than going unnoticed.
	stamps := stampFiles(startupFiles(c.shell, c.env))
	started := time.Now()
	out, err := c.run(ctx, argv, c.cwd, env, c.sandbox, c.terminal)
	if err != nil {
		return nil, nil, err
	}
	snap, recs, err := parseCapture(out, c.policy, nonce)
	if err != nil {
		return nil, nil, err
	}
	final := exportsOf(out)
	plan := bashPlan
	switch c.shell {
	case "zsh":
		plan = zshPlan
	case "sh":
		plan = shPlan
	}
	p := plan(recs, c.env, final, filterEnv(final, c.policy))
	if c.terminal && c.shell == "zsh" {
		zshTerminalSteps(p, byKind(recs))
	}
	snap.Unrestored = append(append(p.unrestored, descriptorPieces(recs)...), c.validate(ctx, p)...)
	snap.FunctionCount, snap.AliasCount, snap.OptionCount = p.counts()
	stamps = append(stamps, sourcedStamps(recs, stamps, started)...)
	if err := c.keep(snap, p, recs); err != nil {
		return nil, nil, &CaptureError{Reason: ReasonReadFailed, Message: "cannot keep the shell snapshot: " + err.Error()}
	}
	switch {
	case snap.zsh:
		snap.definitions.envTouched = zshEnvTouched(recs, c.env, final)
	case snap.definitions != nil:
		snap.definitions.envTouched = bashEnvTouched(recs, c.env, final)
	}
	return snap, stamps, nil
}

// keep writes snap's restore files from plan: the replay's and, for bash,
// the standby's (bashStandbyRender), or a login terminal's rc file
// (bashTerminalRC); and the names recs define (bash and zsh). No standby
// serves a login terminal.
func (c snapshotCapture) keep(snap *Snapshot, plan *restorePlan, recs []record) error {
	snap.interactive = c.terminal
	if c.shell == "zsh" {
		zshenv, zlogin := zshRender(plan)
		path, err := c.files.writeDir(map[string]string{".zshenv": zshenv, ".zlogin": zlogin})
		if err != nil {
			return err
		}
		snap.restore = path
		c.files.own(snap, path)
		snap.zsh, snap.definitions = true, zshDefinitions(recs)
		if goAhead, ok := zshStandby(recs); ok && !c.terminal {
			// The standby restores from the replay's own directory: its
			// environment is then exactly Replay's.
			snap.standby, snap.goAhead = path, goAhead
		}
		return nil
	}
	if c.shell == "sh" {
		path, err := c.files.write(shRender(plan))
		if err != nil {
			return err
		}
		snap.restore = path
		c.files.own(snap, path)
		return nil
	}
	path, err := c.files.write(bashRender(plan))
	if err != nil {
		return err
	}
	snap.restore = path
	c.files.own(snap, path)
	snap.definitions = bashDefinitions(recs)
	if c.terminal {
		if snap.terminal, err = c.files.write(bashTerminalRC(path, bashBindings(byKind(recs)))); err != nil {
			return err
		}
		c.files.own(snap, snap.terminal)
		return nil
	}
	file, goAhead, ok := bashStandbyRender(plan, recs)
	if !ok {
		return nil
	}
	snap.standby, snap.goAhead = path, goAhead
	if file != bashRender(plan) {
		if snap.standby, err = c.files.write(file); err != nil {
			return err
		}
		c.files.own(snap, snap.standby)
	}
	return nil
}

// validate runs plan's validation in a shell of its own and drops the
// pieces that fail from plan, returning their names. A validation that does
// not run drops nothing: the restore then shows its errors as a login shell
// would.
func (c snapshotCapture) validate(ctx context.Context, plan *restorePlan) []Piece {
	if !plan.hasPieces() {
		return nil
	}
	script, argv := bashValidation(plan), []string{c.argv[0], "--noprofile", "--norc"}
	switch c.shell {
	case "zsh":
		script, argv = zshValidation(plan), []string{c.argv[0], "-f"}
	case "sh":
		script, argv = shValidation(plan), []string{c.argv[0]}
	}
	path, err := c.files.write(script)
	if err != nil {
		return nil
	}
	defer os.Remove(path)
	out, err := c.run(ctx, append(argv, path), c.cwd, validationEnv(c.env), c.sandbox, false)
	if err != nil {
		return nil
	}
	return plan.drop(failedSteps(out))
}

// validationEnv is the environment of a validation: the capture's home,
// path and locale, without what would change how the shell starts.
func validationEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	for name, value := range env {
		if name == "HOME" || name == "PATH" || name == "LANG" || strings.HasPrefix(name, "LC_") {
			out[name] = value
		}
	}
	return out
}

// command returns the command and environment that capture the state of
// the login-shell launch c.argv ([path, "-lc", script, args...], or a login
// terminal: [path, "-il"]) with c.env.
func (c snapshotCapture) command(nonce string) ([]string, map[string]string, error) {
	env := maps.Clone(c.env)
	switch c.shell {
	case "bash":
		if v, ok := env["BASH_ENV"]; ok {
			env[userBashEnvVar] = v
			delete(env, "BASH_ENV")
		}
		if c.terminal {
			return []string{c.argv[0], "--noprofile", "-ilc", strings.ReplaceAll(bashTerminalCapture, "@NONCE@", nonce)}, env, nil
		}
		argv := []string{c.argv[0], "--noprofile", "-lc", strings.ReplaceAll(bashCapture, "@NONCE@", nonce)}
		return append(argv, c.argv[3:]...), env, nil
	case "zsh":
		dir, err := c.files.zshCaptureDir()
		if err != nil {
			return nil, nil, err
		}
		if v, ok := env["ZDOTDIR"]; ok {
			env[userZdotdirVar] = v
		}
		env["ZDOTDIR"] = dir
		if c.terminal {
			return []string{c.argv[0], "-ilc", strings.ReplaceAll(zshTerminalCapture, "@NONCE@", nonce)}, env, nil
		}
		argv := slices.Clone(c.argv)
		argv[2] = strings.ReplaceAll(zshCapture, "@NONCE@", nonce)
		return argv, env, nil
	case "sh":
		// sh -c: the script sources the login files itself (shCapture).
		argv := []string{c.argv[0], "-c", strings.ReplaceAll(shCapture, "@NONCE@", nonce)}
		return append(argv, c.argv[3:]...), env, nil
	}
	return nil, nil, errors.New("no capture script for shell " + c.shell)
}

// sourcedStamps stamps the files the capture's records name, those it
// sourced and those its functions come from, but for those of have. A file
// changed since the capture started is stamped as it was never seen, so that
// the snapshot is stale at once: it may have been read before the change.
func sourcedStamps(recs []record, have []fileStamp, started time.Time) []fileStamp {
	seen := map[string]bool{}
	for _, s := range have {
		seen[s.path] = true
	}
	var out []fileStamp
	add := func(path string) {
		if path != "" {
			path = filepath.Clean(path)
		}
		if path == "" || seen[path] {
			return
		}
		seen[path] = true
		s := stampFile(path)
		if s.exists && s.mtimeNs >= started.UnixNano() {
			s.size = -1
		}
		out = append(out, s)
	}
	for _, r := range recs {
		switch r.kind {
		case "file":
			add(r.payload)
		case "fnfiles":
			for line := range strings.SplitSeq(r.payload, "\n") {
				// "name line file", the name without spaces in practice.
				if f := strings.SplitN(line, " ", 3); len(f) == 3 {
					add(f[2])
				}
			}
		}
	}
	return out
}

// counts returns how many functions, aliases and options a plan restores.
func (p *restorePlan) counts() (functions, aliases, options int) {
	for _, s := range append(slices.Clone(p.steps), p.finally...) {
		switch s.kind {
		case "function":
			functions++
		case "alias":
			aliases++
		}
	}
	return functions, aliases, p.options
}
