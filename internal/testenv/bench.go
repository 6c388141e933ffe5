package testenv

import (
	"os"
	"slices"
	"time"
)

// BenchOnly skips a benchmark test unless SANDBOX_BENCH=1 (`make bench` sets it):
// the benchmarks take minutes and assert nothing.
func BenchOnly(t interface{ Skip(args ...any) }) {
	if os.Getenv("SANDBOX_BENCH") != "1" {
		t.Skip("set SANDBOX_BENCH=1 (make bench)")
	}
}

// Median is the middle of ds (the upper one of an even count); ds is left as is.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
