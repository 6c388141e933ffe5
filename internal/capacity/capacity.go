package capacity

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// Request is what an object asks of a host: who it is, what it takes, and
// what it was admitted to take before (nil: nothing).
type Request struct {
	Key      string // namespace/name
	UID      string
	Need     Demand
	Admitted *Demand
}

// reservationTTL is how long a reservation counts without its object bound: a
// placer that died between reserving and binding leaks capacity for this long.
const reservationTTL = 2 * time.Minute

// Used is what is placed on h: its allocation as last counted, plus the
// reservations not yet counted in it. Capacity is enforced through this sum:
// reservations are written with the host's resourceVersion as a precondition, so
// of two placements racing for the last capacity one gets a conflict and looks
// again, and a recount drops only reservations it counted as bound.
func Used(h sandboxv1.DockerHost) Demand {
	u := Demand{Sandboxes: h.Status.Allocated.Sandboxes}
	if h.Status.Allocated.Memory != nil {
		u.Memory = h.Status.Allocated.Memory.DeepCopy()
	}
	now := time.Now()
	for _, r := range h.Status.Reservations {
		if r.Expires.After(now) {
			u.Sandboxes += r.Sandboxes
			if r.Memory != nil {
				u.Memory.Add(*r.Memory)
			}
		}
	}
	return u
}

// Fits says whether h has room for need on top of what it holds.
func Fits(h sandboxv1.DockerHost, need Demand) bool {
	return h.Spec.Capacity == nil || within(h.Spec.Capacity, Used(h), need)
}

// ErrNoRoom says a host filled up between the decision and the reservation.
var ErrNoRoom = fmt.Errorf("the Docker host filled up meanwhile")

// Reserve records p's placement on the host name in its status, read live and
// written with its resourceVersion: a conflict (another placement, a recount)
// is returned for the caller to decide again. A host without capacity needs no
// reservation.
func Reserve(ctx context.Context, c client.Client, api client.Reader, name string, p Request) error {
	h := &sandboxv1.DockerHost{}
	if err := api.Get(ctx, types.NamespacedName{Name: name}, h); err != nil {
		return err
	}
	if h.Spec.Capacity == nil {
		return nil
	}
	if !Fits(*h, p.Need) {
		return ErrNoRoom
	}
	mem := p.Need.Memory.DeepCopy()
	h.Status.Reservations = append(PruneExpired(h.Status.Reservations), sandboxv1.Reservation{
		UID: p.UID, Object: p.Key, Sandboxes: p.Need.Sandboxes, Memory: &mem,
		Expires: metav1.NewTime(time.Now().Add(reservationTTL)),
	})
	return c.Status().Update(ctx, h)
}

func PruneExpired(rs []sandboxv1.Reservation) []sandboxv1.Reservation {
	now := time.Now()
	out := rs[:0:0]
	for _, r := range rs {
		if r.Expires.After(now) {
			out = append(out, r)
		}
	}
	return out
}

// OfSandbox is what a Sandbox takes: one Sandbox, its services' memory.
func OfSandbox(o options.Options, sb *sandboxv1.Sandbox) Demand {
	d := Demand{Sandboxes: 1}
	for _, svc := range sb.Spec.Services {
		d.Memory.Add(memoryOf(o, svc.Resources))
	}
	return d
}

// memoryOf is a service's memory limit, the operator's default when it sets none.
func memoryOf(o options.Options, res *sandboxv1.ServiceResources) resource.Quantity {
	if res != nil && res.Memory != nil {
		return res.Memory.DeepCopy()
	}
	return o.DefaultMemory.DeepCopy()
}

// OfMember is what one of a pool's members takes.
func OfMember(o options.Options, pool *sandboxv1.SandboxPool) Demand {
	return Demand{Sandboxes: 1, Memory: memoryOf(o, pool.Spec.Service.Resources)}
}

// OfPool is what a pool's members take: one Sandbox's worth each.
func OfPool(o options.Options, pool *sandboxv1.SandboxPool) Demand {
	memberMemory := OfMember(o, pool).Memory
	n := int32(1)
	if pool.Spec.Replicas != nil {
		n = *pool.Spec.Replicas
	}
	mem := memberMemory.DeepCopy()
	mem.Mul(int64(n))
	return Demand{Sandboxes: n, Memory: mem}
}

// Demand is what an object takes of a host.
type Demand struct {
	Sandboxes int32
	Memory    resource.Quantity
}

func (d *Demand) Add(o Demand) {
	d.Sandboxes += o.Sandboxes
	d.Memory.Add(o.Memory)
}

func (d *Demand) Sub(o Demand) {
	d.Sandboxes -= o.Sandboxes
	d.Memory.Sub(o.Memory)
}

// Covers: d takes at least as much as o of everything.
func (d Demand) Covers(o Demand) bool {
	return d.Sandboxes >= o.Sandboxes && d.Memory.Cmp(o.Memory) >= 0
}

// larger is the larger of a and b in each amount.
func larger(a, b Demand) Demand {
	out := Demand{Sandboxes: max(a.Sandboxes, b.Sandboxes), Memory: a.Memory.DeepCopy()}
	if b.Memory.Cmp(a.Memory) > 0 {
		out.Memory = b.Memory.DeepCopy()
	}
	return out
}
