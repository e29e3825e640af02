package standby

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/snapexec/snapexec/internal/shellsnap"
)

// ending is what the server sees of a command: its pid's output, its exit
// code or signal, and whether the probe ran as the leader itself.
type ending struct {
	stdout, stderr string
	status         string // "exit N" or "signal NAME"
	leader         bool   // the probe's $$ is the process's pid
}

var probePid = regexp.MustCompile(`probe=[0-9]+`)

func endingOf(cmd *exec.Cmd, stdout, stderr string) ending {
	e := ending{stdout: stdout, stderr: stderr}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		e.status = "signal " + ws.Signal().String()
	} else {
		e.status = "exit " + strconv.Itoa(ws.ExitStatus())
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	e.leader = strings.Contains(stdout, "probe="+pid+"\n")
	// Other pids differ from run to run.
	e.stdout = probePid.ReplaceAllString(strings.ReplaceAll(stdout, "probe="+pid+"\n", "probe=LEADER\n"), "probe=CHILD")
	return e
}

func runEnding(t *testing.T, argv []string, dir string, env []string, message []byte) ending {
	t.Helper()
	return endingOf(runShell(t, argv, dir, env, message))
}

// TestStandbyScriptExecsAsBashDoes runs each script through Replay's command
// and through a standby with tailScript's script: the process must end the
// same way, and the last command must be the process itself in both or in
// neither.
func TestStandbyScriptExecsAsBashDoes(t *testing.T) {
	builtins, err := shellBuiltins(context.Background(), newTestProcs(t), "bash", bash)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bashrc"), "helper() { echo helper; }\nalias ll='ls -l'\n")
	snap := captureLogin(t, home)
	env := loginEnv(home)
	const probe = `sh -c 'echo probe=$$'`
	tests := []struct {
		script string
		refuse bool
	}{
		{script: probe},
		{script: probe + "\n"},
		{script: probe + "\n\n"},
		{script: probe + " # trailing comment"},
		{script: probe + "\n# comment line"},
		{script: probe + ";"},
		{script: "true && " + probe},
		{script: "false || " + probe},
		{script: "true; " + probe},
		{script: "true; true && " + probe},
		{script: "true & " + probe},
		{script: "cd / && true && " + probe},
		{script: "echo first\n" + probe},
		{script: probe + " >/dev/stdout"},
		{script: "! " + probe},
		{script: probe + " | cat"},
		{script: "if true; then " + probe + "; fi"},
		{script: "( " + probe + " )"},
		{script: "{ " + probe + "; }"},
		{script: "echo hi"},
		{script: "printenv _ HOME"},
		{script: "true; printenv _ PATH"},
		{script: "helper; echo after"},
		{script: "helper"},
		{script: `eval 'sh -c "echo probe=$$"'`},
		{script: "trap 'echo bye' EXIT; echo hi"},
		{script: "ll /dev/null", refuse: true}, // not found: exec and a search word their errors differently
		{script: "alias x=y; echo hi", refuse: true},
		{script: "command " + probe, refuse: true},
		{script: "echo $$ >/dev/null; /bin/sh -c 'echo probe=$$'"},
		{script: `sh -c 'kill -SEGV $$'`},
		{script: `sh -c 'exit 7'`},
		{script: `sh -c 'echo probe=$$' "$(echo x)"`},
		{script: "X=1 " + probe, refuse: true},
		{script: "trap 'echo bye' EXIT; " + probe, refuse: true},
		{script: "f() { :; }; " + probe, refuse: true},
		{script: "helper; " + probe, refuse: true},
		{script: "$SHELL_VAR -c 'echo probe=$$'", refuse: true},
		{script: "eval 'true'; " + probe, refuse: true},
		{script: "no-such-program-here", refuse: true},
		{script: `cat <(sh -c 'echo probe=$$')`},
		{script: "if then", refuse: true},
		// After the last command, what a parse cannot say how bash reads (a
		// CR, which bash takes into the word; a line continuation).
		{script: `sh -c 'kill -SEGV $$'` + "\r", refuse: true},
		{script: `sh -c 'kill -SEGV $$' \` + "\n", refuse: true},
		{script: `sh -c 'kill -SEGV $$'\` + "\n", refuse: true},
		{script: `sh -c 'kill -SEGV $$' \` + "\n# comment", refuse: true},
		{script: "true\n" + probe + " \\\n", refuse: true},
		{script: "true\r" + probe, refuse: true},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			in := shellsnap.ReplayInput{Snapshot: snap, Shell: "bash", Command: []string{bash, "-lc", tt.script}, Env: env}
			argv, replayEnv := shellsnap.Replay(in)
			pairs := envPairs(replayEnv)
			script, ok := tailScript(in, home, pairs, builtins)
			if ok == tt.refuse {
				t.Fatalf("tailScript(%q) ok = %v, want %v", tt.script, ok, !tt.refuse)
			}
			if !ok {
				return
			}
			fresh := runEnding(t, argv, home, pairs, nil)
			sArgv, sEnv, _ := standbyCommand(in)
			standby := runEnding(t, sArgv, home, envPairs(sEnv), goAhead(in, script))
			if fresh != standby {
				t.Errorf("script %q:\nReplay's command: %+v\nstandby (script %q): %+v", tt.script, fresh, script, standby)
			}
		})
	}
}
