package dockerhost

import (
	"context"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
)

// allocation counts, from the cache, what is bound to h (Sandboxes, and pools'
// members) into its status, and drops the reservations that count includes, or
// that expired. Both come from one snapshot and are written in one update with
// h's resourceVersion, so allocated plus reservations never falls below what is
// bound. It returns how many objects are bound.
func (r *Reconciler) allocation(ctx context.Context, h *sandboxv1.DockerHost) (int32, error) {
	var sandboxes sandboxv1.SandboxList
	if err := r.List(ctx, &sandboxes, client.MatchingFields{index.DockerHost: h.Name}); err != nil {
		return 0, err
	}
	var pools sandboxv1.SandboxPoolList
	if err := r.List(ctx, &pools, client.MatchingFields{index.DockerHost: h.Name}); err != nil {
		return 0, err
	}
	counted := map[string]bool{}
	var total capacity.Demand
	opts := r.Options
	for i := range sandboxes.Items {
		sb := &sandboxes.Items[i]
		counted[string(sb.UID)] = true
		total.Add(capacity.OfSandbox(opts, sb))
	}
	for i := range pools.Items {
		pool := &pools.Items[i]
		counted[string(pool.UID)] = true
		total.Add(capacity.OfPool(opts, pool))
	}
	h.Status.Allocated = sandboxv1.Allocation{Sandboxes: total.Sandboxes, Memory: resource.NewQuantity(total.Memory.Value(), resource.BinarySI)}
	var keep []sandboxv1.Reservation
	for _, res := range capacity.PruneExpired(h.Status.Reservations) {
		if !counted[res.UID] {
			keep = append(keep, res)
		}
	}
	h.Status.Reservations = keep
	return int32(len(sandboxes.Items) + len(pools.Items)), nil
}
