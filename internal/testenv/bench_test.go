package testenv

import (
	"slices"
	"testing"
	"time"
)

func TestMedianIgnoresOneSlowRunAndLeavesTheSamplesAlone(t *testing.T) {
	s := []time.Duration{9 * time.Second, 2 * time.Second, 60 * time.Second, 3 * time.Second, 2500 * time.Millisecond}
	orig := slices.Clone(s)
	if got := Median(s); got != 3*time.Second {
		t.Errorf("median %s, want 3s", got)
	}
	if !slices.Equal(s, orig) {
		t.Errorf("the samples were reordered: %v (logged after, in the order measured)", s)
	}
}
