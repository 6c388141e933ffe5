package testenv

import "time"

// T is what the helpers need of a test: a *testing.T, or Ginkgo's GinkgoT().
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// WaitFor polls cond every interval until it holds, and fails the test once
// timeout has passed without it; what names the awaited state in that failure.
// It waits for a state: how long that took is for the caller to judge.
func WaitFor(t T, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
			return // Fatalf ends a real test; a recording T goes on
		}
		time.Sleep(interval)
	}
}
