package main

// The containment suite: nothing the server starts outlives it, whether it
// stops on SIGTERM or is killed, and children start clean whatever the
// server inherited (issue 14, points 5 and 8).

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestShutdownEndsCaptures stops a server with a real SIGTERM while four
// captures hang in their profiles: the captures are the manager's, so no
// capture shell is left once run returns.
func TestShutdownEndsCaptures(t *testing.T) {
	procsBefore := descendants()
	s := startServer(t, nil)
	const n = 4
	markers := make([]string, n)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range n {
		home := t.TempDir()
		markers[i] = fmt.Sprintf("61.%d%d", os.Getpid()%100000, i) // a sleep argument no one else uses
		writeTestFile(t, filepath.Join(home, ".bashrc"), "sleep "+markers[i]+"\n")
		body := mustJSON(t, snapshotBody(home, "echo ran", fmt.Sprintf("hang-%d", i), "bash", "/bin/bash"))
		wg.Go(func() {
			// What the request answers is the snapshot cache's business; only
			// that it returns matters here.
			if resp, err := client.Post(s.url+"/exec", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		})
	}
	waitFor(t, "the 4 captures to hang in their profiles", func() bool {
		for _, m := range markers {
			if len(withArg(m)) == 0 {
				return false
			}
		}
		return true
	})

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	defer signal.Stop(sigs)
	http.DefaultClient.CloseIdleConnections()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run() after SIGTERM = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run() did not return after SIGTERM")
	}
	s.cancel()
	s.cancel = nil
	for i, m := range markers {
		if pids := withArg(m); len(pids) > 0 {
			t.Errorf("capture %d's profile (sleep %s) still runs after the server stopped: pids %v", i, m, pids)
		}
	}
	wg.Wait()
	waitNoNewDescendants(t, procsBefore)
}
