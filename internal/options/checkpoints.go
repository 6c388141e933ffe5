package options

import (
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// DefaultMaxCheckpoints is --max-checkpoints' default.
const DefaultMaxCheckpoints = 32

// Checkpoints is how many checkpoints a service that asks for asked (its
// spec.services[].maxCheckpoints; nil: none) may keep: what it asks, at most
// MaxCheckpoints, which is also the default.
func (o Options) Checkpoints(asked *int32) int {
	ceiling := o.MaxCheckpoints
	if ceiling <= 0 {
		ceiling = DefaultMaxCheckpoints
	}
	if asked == nil || int(*asked) > ceiling {
		return ceiling
	}
	return max(1, int(*asked))
}

// validateCheckpoints reports a checkpoint bound that cannot work.
func (o Options) validateCheckpoints(bad func(format string, args ...any)) {
	if o.MaxCheckpoints < 0 || o.MaxCheckpoints > sandboxv1.MaxCheckpointsCeiling {
		bad("--max-checkpoints must be from 1 to %d, such as %d, not %d", sandboxv1.MaxCheckpointsCeiling, DefaultMaxCheckpoints, o.MaxCheckpoints)
	}
}

// Relist is CheckpointsRelist, or its default.
func (o Options) Relist() time.Duration {
	if o.CheckpointsRelist <= 0 {
		return time.Minute
	}
	return o.CheckpointsRelist
}
