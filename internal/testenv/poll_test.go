package testenv

import (
	"strings"
	"testing"
	"time"
)

func TestWaitForReturnsOnceTheStateHolds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		trueAfter int // polls before cond holds
	}{
		{"at once", 0},
		{"after some polls", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{T: t}
			polls := 0
			WaitFor(r, time.Minute, time.Millisecond, "the state", func() bool {
				polls++
				return polls > tc.trueAfter
			})
			if r.failure != "" {
				t.Fatalf("failed although the state came: %s", r.failure)
			}
			if polls != tc.trueAfter+1 {
				t.Errorf("polled %d times, want %d: it must stop at the first success", polls, tc.trueAfter+1)
			}
		})
	}
}

func TestWaitForFailsNamingTheStateAfterTheTimeout(t *testing.T) {
	r := &recorder{T: t}
	const timeout = 100 * time.Millisecond
	start := time.Now()
	WaitFor(r, timeout, 10*time.Millisecond, "the Sandbox to be Ready", func() bool { return false })
	if took := time.Since(start); took < timeout {
		t.Errorf("gave up after %s, before the %s timeout", took, timeout)
	}
	if !strings.Contains(r.failure, "the Sandbox to be Ready") || !strings.Contains(r.failure, "100ms") {
		t.Errorf("failure %q should name what was awaited and for how long", r.failure)
	}
}
