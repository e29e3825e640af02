package files

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

type usage struct {
	allocated uint64 // cumulative heap bytes allocated
	rss, peak uint64 // resident set, now and at its highest, in bytes
}

func memory(t *testing.T) usage {
	t.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := usage{allocated: ms.TotalAlloc}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		name, value, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			u.rss = kb << 10
		case "VmHWM":
			u.peak = kb << 10
		}
	}
	return u
}
