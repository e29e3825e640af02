package snapexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/snapexec/snapexec/internal/testserver"
)

// A readmeExample is one shell command of README.md and the output shown
// for it.
type readmeExample struct {
	line    int    // where the command starts in README.md
	command string // one or more lines, as a shell reads them
	want    string // the output shown: the "# " lines after it, or the fenced block after its block
}

// readmeSetup are the commands of README.md that set the project up rather
// than use a server: they are not run.
var readmeSetup = []string{"go run ./cmd/server", "make test"}

// readmeExamples reads the shell examples of a README: every command of a
// ```sh block (a line ending in a backslash, or one bash cannot parse yet,
// goes on to the next), with the "# "
// comment lines that follow it as its output; a fenced block that follows
// an ```sh block directly is the output of the block's last command. A
// command shown with no output must print none.
func readmeExamples(t *testing.T, readme string) []readmeExample {
	t.Helper()
	var out []readmeExample
	lines := strings.Split(readme, "\n")
	lastBlockEnd := -1 // the index of the closing fence of the last sh block
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") || fence == "```" {
			continue
		}
		start := i + 1
		end := start
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		body := lines[start:end]
		i = end
		if fence != "```sh" {
			// Output of the last command of the sh block right before it.
			if lastBlockEnd >= 0 && strings.TrimSpace(strings.Join(lines[lastBlockEnd+1:start-1], "")) == "" && len(out) > 0 && out[len(out)-1].want == "" {
				out[len(out)-1].want = strings.Join(body, "\n")
			}
			continue
		}
		lastBlockEnd = end
		for j := 0; j < len(body); {
			if strings.TrimSpace(body[j]) == "" || strings.HasPrefix(body[j], "#") {
				t.Fatalf("README.md:%d: output without a command before it: %q", start+j+1, body[j])
			}
			ex := readmeExample{line: start + j + 1, command: body[j]}
			j++
			for strings.HasSuffix(ex.command, "\\") || !shellParses(ex.command) {
				if j == len(body) {
					t.Fatalf("README.md:%d: a command bash cannot parse: %s", ex.line, ex.command)
				}
				ex.command += "\n" + body[j]
				j++
			}
			var want []string
			for ; j < len(body) && strings.HasPrefix(body[j], "#"); j++ {
				want = append(want, strings.TrimPrefix(strings.TrimPrefix(body[j], "#"), " "))
			}
			ex.want = strings.Join(want, "\n")
			if !isSetup(ex.command) {
				out = append(out, ex)
			}
		}
	}
	return out
}

func isSetup(command string) bool {
	for _, s := range readmeSetup {
		if strings.TrimSpace(command) == s {
			return true
		}
	}
	return false
}

func shellParses(command string) bool {
	return exec.Command("bash", "-n", "-c", command).Run() == nil
}

// Values that differ from run to run, each with what stands for it in the
// comparison, in README and in the real output alike.
var readmeVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"(durationMs|pid|waitMs)":[0-9.]+`), `"$1":0`},
	{regexp.MustCompile(`"(startedAt|endedAt|requestId|createdAt|lastUsedAt)":"[^"]*"`), `"$1":""`},
	{regexp.MustCompile(`"stateBytes":[0-9]+`), `"stateBytes":0`},
	// A session's next command finds its standby shell ready or not by a
	// few milliseconds: whether one ran a command depends on the reader's pace.
	{regexp.MustCompile(`"standby":(true|false)`), `"standby":false`},
	{regexp.MustCompile(`\b(p|exec)-[0-9a-f]{16}\b`), `$1-ID`},
}

func normaliseOutput(s string) string {
	for _, v := range readmeVolatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		// A terminal ends its lines with \r\n.
		lines = append(lines, strings.TrimRight(l, " \t\r"))
	}
	return strings.Join(lines, "\n")
}

// sameOutput compares shown and real output after normalising both: as
// JSON values when the shown output is one (so the README may wrap it), else
// line for line.
func sameOutput(shown, real string) bool {
	shown, real = normaliseOutput(shown), normaliseOutput(real)
	var a, b any
	if json.Unmarshal([]byte(shown), &a) == nil {
		return json.Unmarshal([]byte(real), &b) == nil && reflect.DeepEqual(a, b)
	}
	return shown == real
}

// TestReadmeExamples runs every shell example of README.md, in order and in
// one shell as a reader would, against the real server and the real CLI, and
// compares each command's output with the output the README shows.
func TestReadmeExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := readmeExamples(t, string(readme))
	if len(examples) < 10 {
		t.Fatalf("README.md has %d shell examples; the reader or the README is off", len(examples))
	}

	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "snapexec"), "./cmd/snapexec").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/snapexec: %v\n%s", err, out)
	}
	// The README's server is localhost:8080 and its scratch directory
	// /tmp/snapexec-demo, also its files root; the test's are its own.
	demo := t.TempDir()
	s := testserver.Start(t, testserver.Options{NoToken: true, Args: []string{"--files-root", demo}})
	replacer := strings.NewReplacer("localhost:8080", strings.TrimPrefix(s.URL, "http://"), "/tmp/snapexec-demo", demo)

	// One shell runs them all, so that a variable one sets reaches the
	// next; a marker after each command splits the output.
	const marker = "@@readme-example-end@@"
	var script strings.Builder
	for _, ex := range examples {
		fmt.Fprintf(&script, "{\n%s\n} 2>&1\nprintf '\\n%s\\n'\n", replacer.Replace(ex.command), marker)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SNAPEXEC_URL="+s.URL, "SNAPEXEC_TOKEN=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the README's examples failed: %v\n%s", err, out)
	}
	outputs := strings.Split(string(out), "\n"+marker+"\n")
	if len(outputs) != len(examples)+1 {
		t.Fatalf("got %d outputs for %d examples:\n%s", len(outputs)-1, len(examples), out)
	}
	for i, ex := range examples {
		if !sameOutput(ex.want, outputs[i]) {
			t.Errorf("README.md:%d: %s\nshows:\n%s\nprints:\n%s", ex.line, ex.command, ex.want, outputs[i])
		}
	}
}

// TestReadmeExamplesReader checks the reader on a small README: commands,
// continuation lines, comment output, a fenced output block, and the setup
// commands left out.
func TestReadmeExamplesReader(t *testing.T) {
	readme := "text\n\n```sh\nmake test\n```\n\n```sh\ncurl -s x \\\n  -d '{\n}'\n```\n\n```json\n{\"a\": 1}\n```\n\n" +
		"```sh\necho hi   # a note\n# hi\ntrue\n```\n"
	got := readmeExamples(t, readme)
	want := []readmeExample{
		{line: 8, command: "curl -s x \\\n  -d '{\n}'", want: `{"a": 1}`},
		{line: 18, command: "echo hi   # a note", want: "hi"},
		{line: 20, command: "true"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readmeExamples = %+v\nwant %+v", got, want)
	}
}
