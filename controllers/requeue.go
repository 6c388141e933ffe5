package controllers

import (
	"math/rand/v2"
	"time"
)

// Retry pacing of a pass.
const (
	// probeInterval is the slowest pace of probes until the engine's deadline (probeBackoff).
	probeInterval    = time.Second
	pullPollInterval = 5 * time.Second
	// pausedRecheck backs the unpause event up.
	pausedRecheck = time.Minute
)

// soonest is the earliest of durations, where 0 means "no deadline".
func soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// jitter spreads resyncs over ±10% so Sandboxes created together do not resync together.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}
