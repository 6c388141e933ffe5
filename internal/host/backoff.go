package host

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Backoffs of this layer. Their step counts live outside memory where it matters
// (a container's restart count is a label), so a delay is a function of the count.
var (
	// RestartBackoff spaces the recreation of a container that keeps dying.
	RestartBackoff = wait.Backoff{Duration: 2 * time.Second, Factor: 2, Cap: 2 * time.Minute, Steps: math.MaxInt32}
	// PullBackoff spaces the retries of a failing pull.
	PullBackoff = wait.Backoff{Duration: 5 * time.Second, Factor: 2, Cap: 5 * time.Minute, Steps: math.MaxInt32}
)

// Delay is b's delay after n failures (n = 0: the first delay).
func Delay(b wait.Backoff, n int) time.Duration {
	for i := 0; i < n && b.Steps > 0; i++ {
		b.Step()
	}
	return b.Step()
}
