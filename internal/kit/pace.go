package kit

import (
	"math"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Soonest is the earliest of durations, where 0 means "no deadline".
func Soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// Jitter spreads resyncs over ±10% so Sandboxes created together do not resync together.
func Jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}

// RetryBackoff paces every retry of a failure a retry may fix (a Docker call that
// failed or did not answer, Docker down, a teardown that did not finish, an owner
// that could not be inspected): 1s after the first failed pass, doubling with each
// failed pass in a row, at most 5 minutes, ±10% jitter. A pass without a failure
// resets it.
var RetryBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Cap: 5 * time.Minute, Steps: math.MaxInt32}

// StalledRecheck is how often a stalled Sandbox is looked at again (jittered), for
// what blocks it may go without an event saying so; where an event exists (a
// container name freed, a foreign Secret deleted) it resumes at once.
const StalledRecheck = 5 * time.Minute

// ConflictRetry is how soon a placement that lost a race for capacity decides again.
const ConflictRetry = 50 * time.Millisecond
