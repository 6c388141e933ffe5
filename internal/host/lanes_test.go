package host

import (
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// A waiting seed's backstop look never lets the gate forget it: two looks
// in a row may be lost (a full queue, a slow pass) and it keeps its place.
func TestLaneWaitPollKeepsThePlace(t *testing.T) {
	for _, position := range []int{0, 1, 2, 5, 28, 1000} {
		if got := LaneWaitPoll(position); got < LaneWait || 2*got >= lanes.DefaultForgetAfter {
			t.Errorf("the %dth in line looks again in %s: want at least %s, and two looks within %s", position, got, LaneWait, lanes.DefaultForgetAfter)
		}
	}
	if LaneWaitPoll(1) != LaneWait || LaneWaitPoll(28) != maxLaneWait {
		t.Errorf("first in line %s (want %s), 28th %s (want %s)", LaneWaitPoll(1), LaneWait, LaneWaitPoll(28), maxLaneWait)
	}
}
