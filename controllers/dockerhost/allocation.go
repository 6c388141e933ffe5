package dockerhost

import (
	"context"

	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
)

// allocation counts, from the cache, what is bound to h (Sandboxes, and pools'
// members, each at what it was admitted to) into its status, and drops the
// reservations that count includes whole (a grown object's reservation stays
// until it is counted at its new amounts), or that expired. Both come from one snapshot and are written in one update with
// h's resourceVersion, so allocated plus reservations never falls below what is
// bound. An object that waits to be admitted onto h (capacity.Waiting) is not
// counted. It returns how many objects hold h: those counted, and those
// reserved (admitted, about to be counted).
func (r *Reconciler) allocation(ctx context.Context, h *sandboxv1.DockerHost) (int32, error) {
	total, counted, err := capacity.Bound(ctx, r.Client, r.Options, h.Name)
	if err != nil {
		return 0, err
	}
	h.Status.Allocated = sandboxv1.Allocation{Sandboxes: total.Sandboxes, Memory: resource.NewQuantity(total.Memory.Value(), resource.BinarySI)}
	var keep []sandboxv1.Reservation
	for _, res := range capacity.PruneExpired(h.Status.Reservations) {
		if d, ok := counted[res.UID]; !ok || !d.Covers(capacity.ReservationDemand(res)) {
			keep = append(keep, res)
		}
	}
	h.Status.Reservations = keep
	return int32(len(counted) + len(keep)), nil
}
