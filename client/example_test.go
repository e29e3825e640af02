package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/snapexec/snapexec/client"
)

func Example() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Exec(ctx, client.ExecRequest{Argv: []string{"/bin/sh", "-c", "echo hello; exit 3"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s%s %d\n", res.StdoutData(), res.Status, *res.ExitCode)
	// Output:
	// hello
	// exited 3
}

func ExampleClient_ExecStream() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.ExecStream(ctx, client.ExecRequest{Argv: []string{"/bin/sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.01; done"}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for {
		chunk, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		os.Stdout.Write(chunk.Bytes())
	}
	fmt.Println(s.Result().Status, *s.Result().ExitCode)
	// Output:
	// line 1
	// line 2
	// line 3
	// exited 0
}

func ExampleClient_Events() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/sh", "-c", "echo started; sleep 0.1; echo done >&2"}})
	if err != nil {
		log.Fatal(err)
	}
	s, err := c.Events(ctx, p.ProcessId, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for {
		chunk, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s", chunk.Stream, chunk.Bytes())
	}
	fmt.Println(s.Result().Status)
	// Output:
	// stdout: started
	// stderr: done
	// exited
}

func ExampleResult() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.Start(ctx, client.StartProcessRequest{Argv: []string{"/bin/sleep", "60"}})
	if err != nil {
		log.Fatal(err)
	}
	sig, err := client.Result(c.SignalProcessWithResponse(ctx, p.ProcessId, client.SignalRequest{Signal: client.SignalRequestSignalSIGTERM}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("delivered:", sig.Delivered)
	// Output:
	// delivered: true
}

func ExampleError() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Exec(ctx, client.ExecRequest{Argv: []string{"/no/such/program"}})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code, e.Field)
	}
	// Output:
	// 422 spawn_failed argv
}

// A background process that reads its stdin: the long poll answers at its
// first output, the write answers its question, and the next poll, from
// after what was read, gets the rest.
func ExampleClient_Start() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	pipe := true
	p, err := c.Start(ctx, client.StartProcessRequest{
		Argv:      []string{"/bin/sh", "-c", `printf 'name?'; read -r name; echo "hello, $name"`},
		PipeStdin: &pipe,
	})
	if err != nil {
		log.Fatal(err)
	}
	wait := 5000
	page, err := client.Result(c.ReadProcessOutputWithResponse(ctx, p.ProcessId, &client.ReadProcessOutputParams{WaitMs: &wait}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", page.Chunks[0].Bytes())
	data, closeStdin := "snapexec\n", true
	if _, err := client.Result(c.WriteProcessStdinWithResponse(ctx, p.ProcessId, client.StdinWrite{Data: &data, Close: &closeStdin})); err != nil {
		log.Fatal(err)
	}
	after := page.Chunks[len(page.Chunks)-1].Seq
	page, err = client.Result(c.ReadProcessOutputWithResponse(ctx, p.ProcessId, &client.ReadProcessOutputParams{AfterSeq: &after, WaitMs: &wait}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", page.Chunks[0].Bytes())
	// Output:
	// name?
	// hello, snapexec
}

// A login shell's profile is captured once per scope and replayed into the
// scope's later commands, which then skip it.
func Example_shellSnapshot() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	home, err := os.MkdirTemp("", "snapexec-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	if err := os.WriteFile(home+"/.profile", []byte("greet() { echo \"hello from the profile\"; }\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	env := map[string]string{"HOME": home, "PATH": "/usr/bin:/bin"}
	req := client.ExecRequest{
		Argv: []string{"/bin/bash", "-lc", "greet"}, Cwd: &home, Env: &env,
		ShellSnapshot: &client.ShellSnapshotRequest{ScopeId: "example", Shell: client.ShellInfo{Name: "bash", Path: "/bin/bash"}},
	}
	for range 2 {
		res, err := c.Exec(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s %s", res.Snapshot.Outcome, *res.Snapshot.State, res.StdoutData())
	}
	// Output:
	// used on_demand hello from the profile
	// used cache_hit hello from the profile
}

// A program on a terminal, driven as a person at the keyboard would: wait
// for its prompt, type an answer and Enter, read to the end. A terminal
// ends its lines with \r\n.
func ExampleClient_Attach() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.Start(ctx, client.StartProcessRequest{
		Argv: []string{"/bin/sh", "-c", `stty -echo; printf 'name? '; read -r name; echo "hello, $name"; exit 3`},
		Tty:  &client.TTYSize{Cols: 80, Rows: 24},
	})
	if err != nil {
		log.Fatal(err)
	}
	a, err := c.Attach(ctx, p.ProcessId, client.AttachOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	var screen []byte
	for !bytes.Contains(screen, []byte("name? ")) {
		out, err := a.Next()
		if err != nil {
			log.Fatal(err)
		}
		screen = append(screen, out.Data...)
	}
	if _, err := a.Write([]byte("snapexec\r")); err != nil {
		log.Fatal(err)
	}
	rest, err := io.ReadAll(a) // to the process's end
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", append(screen, rest...))
	fmt.Println(a.Result().Status, *a.Result().ExitCode)
	// Output:
	// "name? hello, snapexec\r\n"
	// exited 3
}

func ExampleClient_SessionExec() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("SNAPEXEC_URL"), client.WithToken(os.Getenv("SNAPEXEC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	id, cwd := "example-session", "/tmp"
	if _, err := c.NewSession(ctx, client.SessionCreateRequest{SessionId: &id, Shell: client.ShellInfo{Name: "bash", Path: "/bin/bash"}, Cwd: &cwd}); err != nil {
		log.Fatal(err)
	}
	defer c.DeleteSessionWithResponse(ctx, id)
	for _, script := range []string{"cd / && export GREETING=hello", `pwd; echo "$GREETING"`} {
		res, err := c.SessionExec(ctx, id, client.SessionExecRequest{Script: script})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%sadded %v, cwd %s\n", res.StdoutData(), res.Session.Variables.Added, res.Session.Cwd)
	}
	// Output:
	// added [GREETING], cwd /
	// /
	// hello
	// added [], cwd /
}
