package client_test

import (
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
