package main

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// filesBytes is the size of the file read and written.
	filesBytes = 64 << 20
	// settlePause is the untimed pause before each files mode.
	settlePause = 50 * time.Millisecond
	// filesRounds of each files mode are timed, interleaved, after one
	// unkept round that fills the page cache.
	filesRounds = 9
)

// filesFigures are the files API's throughput beside cat and cp of the same
// file, medians over the rounds, in MB/s (10^6 bytes).
type filesFigures struct {
	SizeMiB int `json:"sizeMiB"`
	Rounds  int `json:"rounds"`
	// ReadMBps is GET /files/content read to its end by the bench; CatMBps
	// is cat of the file into a pipe the bench reads to its end.
	ReadMBps float64 `json:"readMBps"`
	CatMBps  float64 `json:"catMBps"`
	// WriteMBps is PUT /files/content from the file, which the server
	// writes, fsyncs and renames into place; CpMBps is cp of the file, and
	// CpSyncMBps cp then an fsync of the copy (sync FILE), as durable.
	WriteMBps  float64 `json:"writeMBps"`
	CpMBps     float64 `json:"cpMBps"`
	CpSyncMBps float64 `json:"cpSyncMBps"`
}

// filesThroughput times the files API's read and write of one file against
// cat and cp of it, interleaved as the latency modes are.
func (b *bench) filesThroughput(ctx context.Context) (filesFigures, error) {
	src := filepath.Join(b.files, "source")
	data := make([]byte, filesBytes)
	_, _ = crand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		return filesFigures{}, err
	}
	data = nil
	modes := []struct {
		key string
		run func(context.Context) error
	}{
		{"read", func(ctx context.Context) error { return b.readFile(ctx, src) }},
		{"cat", func(ctx context.Context) error { return catFile(ctx, src) }},
		{"write", func(ctx context.Context) error { return b.writeFile(ctx, src, filepath.Join(b.files, "put")) }},
		{"cp", func(ctx context.Context) error {
			return exec.CommandContext(ctx, "cp", src, filepath.Join(b.files, "cp")).Run()
		}},
		{"cpsync", func(ctx context.Context) error {
			dst := filepath.Join(b.files, "cpsync")
			return exec.CommandContext(ctx, "/bin/sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", src, dst).Run()
		}},
	}
	took := make(map[string][]float64)
	order := make([]int, len(modes))
	for i := range order {
		order[i] = i
	}
	for r := range filesRounds + 1 {
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			// Each mode starts with nothing dirty in the page cache, so none
			// waits behind the writeback of the one before it (which made
			// the write's fsync swing from 0.58x to 0.75x cp between quiet
			// runs); the sync is not timed. The pause after it lets work a
			// mode left in the background end before the next one starts:
			// the server frees a replaced file's blocks after its answer.
			unix.Sync()
			time.Sleep(settlePause)
			start := time.Now()
			if err := modes[i].run(ctx); err != nil {
				return filesFigures{}, fmt.Errorf("files %s: %w", modes[i].key, err)
			}
			if r > 0 {
				took[modes[i].key] = append(took[modes[i].key], time.Since(start).Seconds())
			}
		}
	}
	mbps := func(key string) float64 {
		ts := slices.Sorted(slices.Values(took[key]))
		return math.Round(float64(filesBytes)/1e6/quantile(ts, 0.5)*10) / 10
	}
	return filesFigures{
		SizeMiB: filesBytes >> 20, Rounds: filesRounds,
		ReadMBps: mbps("read"), CatMBps: mbps("cat"),
		WriteMBps: mbps("write"), CpMBps: mbps("cp"), CpSyncMBps: mbps("cpsync"),
	}, nil
}

// readFile reads path through GET /files/content to its end.
func (b *bench) readFile(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.base+"/files/content?path="+url.QueryEscape(path), nil)
	if err != nil {
		return err
	}
	resp, err := b.srv.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && (resp.StatusCode != http.StatusOK || n != filesBytes) {
		err = fmt.Errorf("GET /files/content = %d, %d bytes", resp.StatusCode, n)
	}
	return err
}

// writeFile uploads the file at src to dst through PUT /files/content.
func (b *bench) writeFile(ctx context.Context, src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, b.srv.base+"/files/content?path="+url.QueryEscape(dst), f)
	if err != nil {
		return err
	}
	req.ContentLength = filesBytes
	resp, err := b.srv.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT /files/content = %d %s", resp.StatusCode, body)
	}
	return nil
}

// catFile runs cat of path into a pipe the bench reads to its end.
func catFile(ctx context.Context, path string) error {
	cmd := exec.CommandContext(ctx, "cat", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	n, copyErr := io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return err
	}
	if copyErr == nil && n != filesBytes {
		copyErr = fmt.Errorf("cat gave %d bytes", n)
	}
	return copyErr
}
