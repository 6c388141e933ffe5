package sandbox

import (
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
