package exec

import (
	"context"
	"flag"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

var memBench = flag.Bool("membench", false, "run TestRetainedMemoryBound, which holds 200 MiB of retained output")

// TestRetainedMemoryBound holds 200 finished processes with 1 MiB of retained
// output each and reports what the heap holds for them, then runs 200 more to
// show that the table does not grow past its bounds. Run it with
//
//	go test -run TestRetainedMemoryBound -v ./internal/exec/ -args -membench
func TestRetainedMemoryBound(t *testing.T) {
	if !*memBench {
		t.Skip("set -membench to measure the retained memory")
	}
	tests := []struct {
		name string
		out  int // bytes of stdout per process
	}{
		{"1 MiB each", 1 << 20},
		{"no output", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { measureRetained(t, 200, tt.out) })
	}
}

func measureRetained(t *testing.T, procs, out int) {
	m := NewManager(Options{
		Grace:                  time.Second,
		MaxRetained:            procs,
		MaxRetainedOutputBytes: int64(procs * (out + out/16 + 1024)), // the data plus room for the per-chunk overhead
		Retention:              time.Hour,
	})
	runBatch := func() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for range procs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				p, err := m.Run(context.Background(), Spec{Argv: []string{"head", "-c", strconv.Itoa(out), "/dev/zero"}})
				if err != nil {
					t.Error(err)
					return
				}
				if got := p.Info().StdoutBytes; got != int64(out) {
					t.Errorf("StdoutBytes = %d, want %d", got, out)
				}
			})
		}
		wg.Wait()
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}

	before := heap()
	runBatch()
	after := heap()
	entries, retained := tableSize(m)
	if entries != procs {
		t.Fatalf("table holds %d processes, want %d", entries, procs)
	}
	t.Logf("HeapInuse before %.1f MiB, after %d processes of %d bytes %.1f MiB: %.1f MiB more, %.1f KiB a process; accounted retained bytes %.1f MiB",
		mib(before), procs, out, mib(after), mib(after-before), float64(after-before)/float64(procs)/1024, mib(uint64(retained)))

	runBatch()
	again := heap()
	entries, retained = tableSize(m)
	t.Logf("after %d more: HeapInuse %.1f MiB, %d processes retained, accounted %.1f MiB", procs, mib(again), entries, mib(uint64(retained)))
	if retained > m.opts.MaxRetainedOutputBytes || entries > procs {
		t.Errorf("retained %d bytes in %d processes, beyond the bounds %d, %d", retained, entries, m.opts.MaxRetainedOutputBytes, procs)
	}
	if limit := uint64(float64(m.opts.MaxRetainedOutputBytes)*1.25) + 4<<20; again > before && again-before > limit {
		t.Errorf("heap grew by %.1f MiB, want at most %.1f MiB (the bound and a quarter)", mib(again-before), mib(limit))
	}
	runtime.KeepAlive(m)
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
