package sandbox

import (
	"sigs.k8s.io/controller-runtime/pkg/event"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// laneKind names a Sandbox's seeds at the host's lane gate.
const laneKind = "Sandbox"

// seedLane is the lane of a service's seed: one per service of the Sandbox.
func (r *Reconciler) seedLane(sb *sandboxv1.Sandbox, service string) host.Lane {
	return r.Host.SeedLane(laneKind, sb.Namespace, sb.Name, string(sb.UID), service)
}

// releaseSeedLanes gives back the lanes of a Sandbox that goes: its seeds go
// with its containers.
func (r *Reconciler) releaseSeedLanes(sb *sandboxv1.Sandbox) {
	r.Host.ReleaseSeedLanes(laneKind, sb.Namespace, sb.Name, string(sb.UID))
}

// poke re-queues a Sandbox without blocking (a lane was granted to it); a
// full queue leaves it to its backstop poll (host.LaneWaitPoll).
func (r *Reconciler) poke(namespace, name string) {
	sb := &sandboxv1.Sandbox{}
	sb.Namespace, sb.Name = namespace, name
	select {
	case r.requeue <- event.TypedGenericEvent[*sandboxv1.Sandbox]{Object: sb}:
	default:
	}
}
