package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// reservationTTL is how long a reservation counts without its object bound: a
// placer that died between reserving and binding leaks capacity for this long.
const reservationTTL = 2 * time.Minute

// used is what is placed on h: its allocation as last counted, plus the
// reservations not yet counted in it. Capacity is enforced through this sum:
// reservations are written with the host's resourceVersion as a precondition, so
// of two placements racing for the last capacity one gets a conflict and looks
// again, and a recount drops only reservations it counted as bound.
func used(h sandboxv1.DockerHost) demand {
	u := demand{sandboxes: h.Status.Allocated.Sandboxes}
	if h.Status.Allocated.Memory != nil {
		u.memory = h.Status.Allocated.Memory.DeepCopy()
	}
	now := time.Now()
	for _, r := range h.Status.Reservations {
		if r.Expires.After(now) {
			u.sandboxes += r.Sandboxes
			if r.Memory != nil {
				u.memory.Add(*r.Memory)
			}
		}
	}
	return u
}

// fits says whether h has room for need on top of what it holds.
func fits(h sandboxv1.DockerHost, need demand) bool {
	c := h.Spec.Capacity
	if c == nil {
		return true
	}
	u := used(h)
	if c.Sandboxes != nil && u.sandboxes+need.sandboxes > *c.Sandboxes {
		return false
	}
	if c.Memory != nil {
		total := u.memory.DeepCopy()
		total.Add(need.memory)
		if total.Cmp(*c.Memory) > 0 {
			return false
		}
	}
	return true
}

// errNoRoom says a host filled up between the decision and the reservation.
var errNoRoom = fmt.Errorf("the Docker host filled up meanwhile")

// reserve records p's placement on the host name in its status, read live and
// written with its resourceVersion: a conflict (another placement, a recount)
// is returned for the caller to decide again. A host without capacity needs no
// reservation.
func reserve(ctx context.Context, c client.Client, api client.Reader, name string, p placeable) error {
	h := &sandboxv1.DockerHost{}
	if err := api.Get(ctx, types.NamespacedName{Name: name}, h); err != nil {
		return err
	}
	if h.Spec.Capacity == nil {
		return nil
	}
	if !fits(*h, p.need) {
		return errNoRoom
	}
	mem := p.need.memory.DeepCopy()
	h.Status.Reservations = append(pruneExpired(h.Status.Reservations), sandboxv1.Reservation{
		UID: p.uid, Object: p.key, Sandboxes: p.need.sandboxes, Memory: &mem,
		Expires: metav1.NewTime(time.Now().Add(reservationTTL)),
	})
	return c.Status().Update(ctx, h)
}

func pruneExpired(rs []sandboxv1.Reservation) []sandboxv1.Reservation {
	now := time.Now()
	out := rs[:0:0]
	for _, r := range rs {
		if r.Expires.After(now) {
			out = append(out, r)
		}
	}
	return out
}

// poolDemand is what a pool's members take: one Sandbox's worth each.
func poolDemand(pool *sandboxv1.SandboxPool, memberMemory resource.Quantity) demand {
	n := int32(1)
	if pool.Spec.Replicas != nil {
		n = *pool.Spec.Replicas
	}
	mem := memberMemory.DeepCopy()
	mem.Mul(int64(n))
	return demand{sandboxes: n, memory: mem}
}
