package standby

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
)

// shellBuiltins returns the builtin commands and reserved words of the bash
// or zsh (shell) at path, as a plain bash -c (zsh -fc) lists them: a
// replayed or standby shell has exactly these, since no profile runs in it
// (and a standby serves no state that disables one). The probe is an
// unlisted process of procs, with an empty environment, bounded by 5 s and
// ctx.
func shellBuiltins(ctx context.Context, procs *exec.Manager, shell, path string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	argv := []string{path, "-c", "compgen -b; compgen -k"}
	if shell == "zsh" {
		argv = []string{path, "-fc", "print -rl -- ${(k)builtins} ${(k)reswords}"}
	}
	p, err := procs.Spawn(exec.Spec{Argv: argv, DiscardStderr: true})
	if err != nil {
		return nil, err
	}
	p.Wait(ctx)
	r := p.Result()
	if r.Status != exec.StatusExited || *r.ExitCode != 0 {
		return nil, fmt.Errorf("%s -c compgen: %s %s", path, r.Status, r.Signal)
	}
	builtins := map[string]bool{}
	for _, name := range strings.Fields(string(r.Stdout.Data)) {
		builtins[name] = true
	}
	return builtins, nil
}
