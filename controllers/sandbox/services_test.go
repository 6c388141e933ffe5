package sandbox

import (
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// A stalled service waits for the slow recheck; the others keep their own pace.
func TestPassResultKeepsSiblingsRequeues(t *testing.T) {
	const resync = 10 * time.Minute
	probing := serviceResult{requeue: time.Second}
	stalled := serviceResult{stalled: true}
	if got := passResult([]serviceResult{stalled, probing}, resync).RequeueAfter; got != time.Second {
		t.Errorf("stalled + probing: requeue after %s, want the probe's 1s", got)
	}
	got := passResult([]serviceResult{stalled}, resync).RequeueAfter
	if low, high := kit.StalledRecheck*9/10, kit.StalledRecheck*11/10; got < low || got > high {
		t.Errorf("stalled alone: requeue after %s, want the recheck (%s ±10%%)", got, kit.StalledRecheck)
	}
	if got := passResult([]serviceResult{{}}, resync).RequeueAfter; got < resync*9/10 || got > resync*11/10 {
		t.Errorf("settled: requeue after %s, want the resync", got)
	}
}
