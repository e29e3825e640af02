// Command healthcheck is a container health probe for images that have no
// shell, curl or wget, such as the OpenTelemetry Collector's (which is built
// FROM scratch). It GETs one URL and exits 0 when the answer is 2xx, else 1:
//
//	healthcheck http://127.0.0.1:13133/
//
// It is built static (standard library only) by deploy/otel-collector/Dockerfile
// and copied into the collector image; compose.yaml runs it as that service's
// healthcheck, against the collector's health_check extension.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// timeout bounds the whole probe; compose's own healthcheck timeout is longer.
const timeout = 2 * time.Second

func main() {
	os.Exit(probe(os.Args, os.Stderr))
}

// probe returns the process exit code for args (program name, URL).
func probe(args []string, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: healthcheck URL")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[1], nil)
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 2
	}
	// No proxy: the probe talks to its own container.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "healthcheck:", err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		fmt.Fprintf(stderr, "healthcheck: %s answered %s\n", args[1], resp.Status)
		return 1
	}
	return 0
}
