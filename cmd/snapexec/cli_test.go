package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapexec/snapexec/client"
	"github.com/snapexec/snapexec/internal/testserver"
)

// everyByte is bytes 0 to 255, in order.
func everyByte() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestExecPassesThrough(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantStdout []byte
		wantStderr []byte
		wantCode   int
		wantSignal string
	}{
		{
			name:       "both streams and the exit code",
			script:     `printf 'out \377\n'; printf 'err \376' >&2; exit 7`,
			wantStdout: []byte("out \xff\n"), wantStderr: []byte("err \xfe"), wantCode: 7,
		},
		{
			name:       "every byte",
			script:     `for i in {0..255}; do printf "\\$(printf %03o $i)"; done`,
			wantStdout: everyByte(),
		},
		{
			name:       "more output than a chunk",
			script:     `yes 0123456789abcdef | head -c 300000; echo done >&2`,
			wantStdout: bytes.Repeat([]byte("0123456789abcdef\n"), 300000/17+1)[:300000], wantStderr: []byte("done\n"),
		},
		{name: "killed", script: `echo before; kill -KILL $$`, wantStdout: []byte("before\n"), wantCode: 128 + 9, wantSignal: "SIGKILL"},
		{name: "terminated", script: `kill -TERM $$`, wantCode: 128 + 15, wantSignal: "SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, nil, "exec", "--", "/bin/bash", "-c", tt.script)
			if !bytes.Equal(r.stdout, tt.wantStdout) || !bytes.Equal(r.stderr, tt.wantStderr) || r.code != tt.wantCode {
				t.Errorf("exec: %d bytes of stdout, %d of stderr, exit %d; want %d, %d, exit %d (equal: stdout %v, stderr %v)",
					len(r.stdout), len(r.stderr), r.code, len(tt.wantStdout), len(tt.wantStderr), tt.wantCode,
					bytes.Equal(r.stdout, tt.wantStdout), bytes.Equal(r.stderr, tt.wantStderr))
			}

			r = cli(t, nil, "--json", "exec", "--", "/bin/bash", "-c", tt.script)
			var res client.ExecResult
			if err := json.Unmarshal(r.stdout, &res); err != nil {
				t.Fatalf("exec --json: %v; %s", err, r)
			}
			if !bytes.Equal(res.StdoutData(), tt.wantStdout) || !bytes.Equal(res.StderrData(), tt.wantStderr) || r.code != tt.wantCode || len(r.stderr) != 0 {
				t.Errorf("exec --json: result %+v, exit %d, stderr %q; want the same output and exit %d", res, r.code, r.stderr, tt.wantCode)
			}
			if got := ptr(res.Signal); got != tt.wantSignal {
				t.Errorf("exec --json: signal %q, want %q", got, tt.wantSignal)
			}
		})
	}
}

func ptr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestExecFlags(t *testing.T) {
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantStdout string
		wantCode   int
	}{
		{name: "cwd", args: []string{"--cwd", "/tmp", "--", "/bin/pwd"}, wantStdout: "/tmp\n"},
		{
			name: "env, set and passed", env: []string{"FROM_HERE=passed"},
			args:       []string{"--env", "SET=1", "--env", "FROM_HERE", "--", "/bin/sh", "-c", `echo "$SET $FROM_HERE"`},
			wantStdout: "1 passed\n",
		},
		{name: "program flags are the program's", args: []string{"/bin/echo", "-n", "--cwd"}, wantStdout: "--cwd"},
		{name: "timeout", args: []string{"--timeout", "200ms", "--", "/bin/sleep", "30"}, wantCode: 128 + 15},
		{name: "snapshot", args: []string{"--snapshot", "cli-test", "--", "/bin/bash", "-lc", "echo warm"}, wantStdout: "warm\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, tt.env, append([]string{"exec"}, tt.args...)...)
			if string(r.stdout) != tt.wantStdout || r.code != tt.wantCode {
				t.Errorf("exec %s: %s; want stdout %q, exit %d", strings.Join(tt.args, " "), r, tt.wantStdout, tt.wantCode)
			}
		})
	}
	r := cli(t, nil, "--json", "exec", "--snapshot", "cli-test", "--", "/bin/bash", "-lc", "true")
	var res client.ExecResult
	if err := json.Unmarshal(r.stdout, &res); err != nil || res.Snapshot.Outcome == client.SnapshotReceiptOutcomeNotRequested {
		t.Errorf("exec --json --snapshot: snapshot %+v (%v); want it requested", res.Snapshot, err)
	}
}

// noisyScript writes numbered lines to stdout (not UTF-8) and stderr, then
// exits 5.
const noisyScript = `for ((i = 1; i <= 1500; i++)); do printf 'out %d \377\n' $i; printf 'err %d\n' $i >&2; done; exit 5`

func noisyOutput() (stdout, stderr []byte) {
	var out, errs bytes.Buffer
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&out, "out %d \xff\n", i)
		fmt.Fprintf(&errs, "err %d\n", i)
	}
	return out.Bytes(), errs.Bytes()
}

func TestLogsFollowSurvivesCuts(t *testing.T) {
	start := cli(t, nil, "run", "--bg", "--", "/bin/bash", "-c", noisyScript)
	id := strings.TrimSpace(string(start.stdout))
	if start.code != 0 || id == "" {
		t.Fatalf("run --bg: %s", start)
	}
	proxy := testserver.CutStreams(t, os.Getenv("SNAPEXEC_URL"), testserver.Cut{Streams: 2, After: 900})
	r := cli(t, []string{"SNAPEXEC_URL=" + proxy}, "logs", "-f", id)
	wantOut, wantErr := noisyOutput()
	if !bytes.Equal(r.stdout, wantOut) || !bytes.Equal(r.stderr, wantErr) || r.code != 5 {
		t.Errorf("logs -f through two cuts: %d bytes of stdout, %d of stderr, exit %d; want %d, %d, exit 5, exactly",
			len(r.stdout), len(r.stderr), r.code, len(wantOut), len(wantErr))
	}
	// Without -f, what the server holds, the same bytes.
	r = cli(t, nil, "logs", id)
	if !bytes.Equal(r.stdout, wantOut) || !bytes.Equal(r.stderr, wantErr) || r.code != 0 {
		t.Errorf("logs: %d bytes of stdout, %d of stderr, exit %d; want %d, %d, exit 0", len(r.stdout), len(r.stderr), r.code, len(wantOut), len(wantErr))
	}
}

func TestRunFollows(t *testing.T) {
	runID := uniqueID("cli-run-fg")
	r := cli(t, nil, "run", "--id", runID, "--", "/bin/bash", "-c", noisyScript)
	wantOut, wantErr := noisyOutput()
	if !bytes.Equal(r.stdout, wantOut) || !bytes.Equal(r.stderr, wantErr) || r.code != 5 {
		t.Errorf("run: %d bytes of stdout, %d of stderr, exit %d; want %d, %d, exit 5", len(r.stdout), len(r.stderr), r.code, len(wantOut), len(wantErr))
	}
}

// decodeLines decodes each line of out into a new T.
func decodeLines[T any](t *testing.T, out []byte) []T {
	t.Helper()
	var vs []T
	for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		vs = append(vs, v)
	}
	return vs
}

func TestJSONOutputsParse(t *testing.T) {
	jsonID := uniqueID("cli-json")
	r := cli(t, nil, "--json", "run", "--bg", "--id", jsonID, "--", "/bin/sh", "-c", "echo one; echo two >&2; exec sleep 30")
	started := decodeLines[client.Process](t, r.stdout)
	if r.code != 0 || started[0].ProcessId != jsonID || started[0].Status != client.ProcessStatusRunning {
		t.Fatalf("run --bg --json: %s", r)
	}
	check := func(args []string, decode func(out []byte) string) {
		t.Helper()
		r := cli(t, nil, append([]string{"--json"}, args...)...)
		wantCode := 0
		if args[0] == "logs" && args[1] == "-f" {
			wantCode = 128 + 15 // it exits as the process did, SIGTERM'd just before
		}
		if r.code != wantCode {
			t.Errorf("%s: %s", strings.Join(args, " "), r)
			return
		}
		if problem := decode(r.stdout); problem != "" {
			t.Errorf("%s --json: %s; output %q", strings.Join(args, " "), problem, r.stdout)
		}
	}
	check([]string{"ps"}, func(out []byte) string {
		for _, p := range decodeLines[client.ProcessList](t, out)[0].Processes {
			if p.ProcessId == jsonID {
				return ""
			}
		}
		return jsonID + " is not listed"
	})
	check([]string{"logs", jsonID}, func(out []byte) string {
		var text []string
		for _, c := range decodeLines[client.OutputChunk](t, out) {
			text = append(text, string(c.Stream)+":"+string(c.Bytes()))
		}
		if got := strings.Join(text, ","); got != "stdout:one\n,stderr:two\n" && got != "stderr:two\n,stdout:one\n" {
			return "chunks " + got
		}
		return ""
	})
	check([]string{"kill", "--signal", "term", jsonID}, func(out []byte) string {
		if !decodeLines[client.SignalResult](t, out)[0].Delivered {
			return "not delivered"
		}
		return ""
	})
	check([]string{"logs", "-f", jsonID}, func(out []byte) string {
		lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
		if n := len(decodeLines[client.OutputChunk](t, out)) - 1; n != 2 {
			return fmt.Sprintf("%d chunks, want 2", n)
		}
		// The last line is the ending, its exitCode null.
		if last, want := string(lines[len(lines)-1]), `{"type":"exit","status":"signaled","exitCode":null,"signal":"SIGTERM"}`; last != want {
			return fmt.Sprintf("last line %s, want %s", last, want)
		}
		return ""
	})
	check([]string{"kill", jsonID}, func(out []byte) string {
		if decodeLines[client.TerminateResult](t, out)[0].Running {
			return "still running after SIGTERM"
		}
		return ""
	})
	check([]string{"prewarm", "cli-json-scope"}, func(out []byte) string {
		if e := decodeLines[client.SnapshotEntry](t, out)[0]; e.ScopeId != "cli-json-scope" {
			return "scope " + e.ScopeId
		}
		return ""
	})
	check([]string{"prewarm", "cli-json-scope", "--terminal"}, func(out []byte) string {
		if e := decodeLines[client.SnapshotEntry](t, out)[0]; !e.Terminal {
			return "--terminal gave a command's snapshot"
		}
		return ""
	})
	check([]string{"snapshots"}, func(out []byte) string {
		if len(decodeLines[client.SnapshotList](t, out)[0].Entries) == 0 {
			return "no entries"
		}
		return ""
	})
	check([]string{"snapshots", "cli-json-scope"}, func(out []byte) string {
		if len(decodeLines[client.SnapshotEntries](t, out)[0].Entries) != 2 {
			return "not two entries, the commands' and the terminals'"
		}
		return ""
	})
	check([]string{"forget", "cli-json-scope"}, func(out []byte) string {
		decodeLines[struct{}](t, out)
		return ""
	})
}

func TestErrors(t *testing.T) {
	token := os.Getenv("SNAPEXEC_TOKEN")
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{name: "unknown process", args: []string{"logs", "no-such-process"}, wantCode: 1, wantStderr: "snapexec: not_found (404): "},
		{name: "unknown process, following", args: []string{"logs", "-f", "no-such-process"}, wantCode: 1, wantStderr: "not_found (404)"},
		{name: "program not found", args: []string{"exec", "--", "/no/such/program"}, wantCode: 255, wantStderr: "spawn_failed (422): the program could not be started"},
		{name: "program not found, run", args: []string{"run", "--bg", "--", "/no/such/program"}, wantCode: 255, wantStderr: "spawn_failed (422)"},
		{name: "bad signal", args: []string{"kill", "--signal", "USR1", "whatever"}, wantCode: 1, wantStderr: "invalid_request (400)"},
		{name: "wrong token", args: []string{"--token", "wrong-token-0123456789", "ps"}, wantCode: 1, wantStderr: "unauthorized (401)"},
		{name: "no token", env: []string{"SNAPEXEC_TOKEN="}, args: []string{"snapshots"}, wantCode: 1, wantStderr: "unauthorized (401)"},
		{name: "no server", args: []string{"--url", "http://127.0.0.1:1", "ps"}, wantCode: 1, wantStderr: "connection refused"},
		{name: "no program", args: []string{"exec"}, wantCode: 2, wantStderr: "requires at least 1 arg"},
		{name: "unknown flag", args: []string{"ps", "--bogus"}, wantCode: 2, wantStderr: "unknown flag: --bogus"},
		{name: "shell without snapshot", args: []string{"exec", "--shell", "bash", "--", "/bin/true"}, wantCode: 2, wantStderr: "--snapshot"},
		{name: "env unset here", args: []string{"exec", "--env", "SNAPEXEC_NOT_SET_ANYWHERE", "--", "/bin/true"}, wantCode: 2, wantStderr: "is not set here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, tt.env, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(string(r.stderr), tt.wantStderr) || len(r.stdout) != 0 {
				t.Errorf("snapexec %s: %s; want exit %d, nothing on stdout, and %q on stderr", strings.Join(tt.args, " "), r, tt.wantCode, tt.wantStderr)
			}
			if strings.Contains(r.String(), token) {
				t.Errorf("snapexec %s shows the token", strings.Join(tt.args, " "))
			}
		})
	}

	r := cli(t, nil, "--json", "logs", "no-such-process")
	var problem struct {
		Status    int    `json:"status"`
		Code      string `json:"code"`
		Detail    string `json:"detail"`
		RequestID string `json:"requestId"`
	}
	if err := json.Unmarshal(r.stderr, &problem); err != nil || r.code != 1 || problem.Status != 404 || problem.Code != "not_found" || problem.RequestID == "" {
		t.Errorf("--json logs no-such-process: %s (%v); want exit 1 and the problem as JSON on stderr", r, err)
	}
}

func TestTokenIsNeverShown(t *testing.T) {
	token := os.Getenv("SNAPEXEC_TOKEN")
	for _, args := range [][]string{{"--help"}, {"exec", "--help"}, {"--version"}, {"help", "logs"}, {"--url", "http://127.0.0.1:1", "ps"}} {
		r := cli(t, nil, args...)
		if strings.Contains(r.String(), token) {
			t.Errorf("snapexec %s shows the token", strings.Join(args, " "))
		}
	}
}

func TestUnixSocketURL(t *testing.T) {
	sock := testserver.UnixSocket(t, os.Getenv("SNAPEXEC_URL"))
	r := cli(t, []string{"SNAPEXEC_URL=unix:" + sock}, "exec", "--", "/bin/echo", "over the socket")
	if string(r.stdout) != "over the socket\n" || r.code != 0 {
		t.Errorf("exec over unix:%s: %s", sock, r)
	}
}

func TestVersionAndCompletion(t *testing.T) {
	completeID := uniqueID("cli-complete")
	if r := cli(t, nil, "--version"); r.code != 0 || !strings.HasPrefix(string(r.stdout), "snapexec version ") {
		t.Errorf("--version: %s", r)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := cli(t, nil, "completion", shell)
		if r.code != 0 || !bytes.Contains(r.stdout, []byte("snapexec")) {
			t.Errorf("completion %s: exit %d, %d bytes", shell, r.code, len(r.stdout))
		}
	}
	// Process ids complete from the server.
	if r := cli(t, nil, "run", "--bg", "--id", completeID, "--", "/bin/true"); r.code != 0 {
		t.Fatalf("run --bg: %s", r)
	}
	for _, command := range []string{"kill", "attach"} {
		r := cli(t, nil, "__complete", command, "")
		if r.code != 0 || !bytes.Contains(r.stdout, []byte(completeID+"\t")) {
			t.Errorf("__complete %s '': %s; want %s offered", command, r, completeID)
		}
	}
}

// TestExecInterrupted: an exec interrupted by signal N exits 128+N, as a
// shell reports a command that N ended, and the server ends the command it
// ran.
func TestExecInterrupted(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tt.sig.String(), func(t *testing.T) { testExecInterrupted(t, tt.sig, tt.want) })
	}
}

func testExecInterrupted(t *testing.T, sig syscall.Signal, want int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		t.Fatal(err)
	}
	// A script of its own, so that it names its one process.
	script := fmt.Sprintf("echo up; exec sleep %d", 60+int(sig))
	cmd := exec.CommandContext(ctx, os.Args[0], "exec", "--", "/bin/sh", "-c", script)
	cmd.Env = cliEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "up\n" {
		t.Fatalf("first line %q (%v), want up", line, err)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != want || stderr.Len() != 0 {
		t.Errorf("exit status after %v = %d, stderr %q; want %d and nothing said", sig, code, stderr.String(), want)
	}
	// The command is the one process running it under exec.
	for {
		list, err := client.Result(c.ListProcessesWithResponse(ctx))
		if err != nil {
			t.Fatal(err)
		}
		running, found := false, false
		for _, p := range list.Processes {
			if strings.HasPrefix(p.ProcessId, "exec-") && strings.Join(p.Argv, " ") == "/bin/sh -c "+script && p.StartedAt.After(time.Now().Add(-time.Minute)) {
				found, running = true, p.Status == client.ProcessStatusRunning
				if !running && p.Status != client.ProcessStatusTerminated {
					t.Errorf("the interrupted command's status = %s, want terminated", p.Status)
				}
			}
		}
		if !found {
			t.Fatal("the interrupted command is not in the process table")
		}
		if !running {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the interrupted command still runs")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestFollowSaysWhatWasLost: a reader that falls behind the server's output
// ring (1 MiB per process) gets a lost event; follow says so on stderr and
// goes on. The CLI's stdout is not read until the process has ended, so
// that 128 MB outruns the ring and every buffer on the way (pipe, sockets).
func TestFollowSaysWhatWasLost(t *testing.T) {
	lostID := uniqueID("cli-lost")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		t.Fatal(err)
	}
	const size = 128 << 20
	cmd := exec.CommandContext(ctx, os.Args[0], "run", "--id", lostID, "--", "/bin/sh", "-c", fmt.Sprintf("yes 0123456789abcdef | head -c %d", size))
	cmd.Env = cliEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := client.Result(c.GetProcessWithResponse(ctx, lostID))
		if err == nil && p.Status != client.ProcessStatusRunning {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the process did not end: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	n, err := io.Copy(io.Discard, stdout)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 || n >= size || !strings.Contains(stderr.String(), "chunks of output lost here") {
		t.Errorf("run of %d bytes read late: exit %d, %d bytes of stdout, stderr %q; want exit 0, fewer bytes, and the loss said", size, code, n, stderr.String())
	}
}

// uniqueID is name made unique to this run, so that the tests can run again
// (-count) against a server that keeps the processes they started.
func uniqueID(name string) string { return fmt.Sprintf("%s-%d", name, time.Now().UnixNano()) }
