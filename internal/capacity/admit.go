package capacity

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// Waiting says an object bound to a host waits to be admitted onto it (its
// Ready condition says Unschedulable): it made nothing there and holds no room,
// so the host's allocation does not count it and it does not keep a host
// being deleted.
func Waiting(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, sandboxv1.ConditionReady)
	return c != nil && c.Reason == sandboxv1.ReasonUnschedulable
}

// Bound is what the cache shows bound to the host name: the Sandboxes and pools
// that do not wait to be admitted, their demand summed, and their UIDs.
func Bound(ctx context.Context, r client.Reader, o options.Options, name string) (Demand, map[string]bool, error) {
	var sandboxes sandboxv1.SandboxList
	if err := r.List(ctx, &sandboxes, client.MatchingFields{index.DockerHost: name}); err != nil {
		return Demand{}, nil, err
	}
	var pools sandboxv1.SandboxPoolList
	if err := r.List(ctx, &pools, client.MatchingFields{index.DockerHost: name}); err != nil {
		return Demand{}, nil, err
	}
	var total Demand
	counted := map[string]bool{}
	for i := range sandboxes.Items {
		if sb := &sandboxes.Items[i]; !Waiting(sb.Status.Conditions) {
			counted[string(sb.UID)] = true
			total.Add(OfSandbox(o, sb))
		}
	}
	for i := range pools.Items {
		if pool := &pools.Items[i]; !Waiting(pool.Status.Conditions) {
			counted[string(pool.UID)] = true
			total.Add(OfPool(o, pool))
		}
	}
	return total, counted, nil
}

// Closed says why h takes nothing new ("" when it does): it is being deleted
// or cordoned. What already runs there stays.
func Closed(h *sandboxv1.DockerHost) string {
	switch {
	case !h.DeletionTimestamp.IsZero():
		return "Docker host " + h.Name + " is being deleted"
	case h.Spec.Unschedulable:
		return "Docker host " + h.Name + " is cordoned (spec.unschedulable)"
	}
	return ""
}

// Admission decides whether an object bound to a host by its author
// (spec.dockerHost, which skips placement) or by placement may make its first
// container there.
type Admission struct {
	Client  client.Client // writes the host's reservations
	API     client.Reader // reads the host live
	Cache   client.Reader // lists what is bound to it
	Options options.Options
}

// Admit says why the host name does not take p, whose status conditions are
// conds, now ("" when it does): a host
// cordoned or being deleted takes nothing new, and one with capacity takes p
// only beside what is bound to it and reserved. It is called before p makes
// anything, on every such pass, and is idempotent. p, not counted yet, leaves
// with a reservation, which also keeps the host from being deleted under it.
//
// No over-admission: the host is read live first, then the cache; p counts
// itself once whether or not the cache counts it. An object the cache counts
// needs no reservation: each such object was admitted by a pass that already
// counted every object that entered the (one, shared) cache before it. An
// object that waited (not counted) holds a reservation, written with the
// host's resourceVersion, until the host's recount counts it.
func (a Admission) Admit(ctx context.Context, name string, p Request, conds []metav1.Condition) (string, error) {
	h := &sandboxv1.DockerHost{}
	if err := a.Cache.Get(ctx, types.NamespacedName{Name: name}, h); err != nil {
		return "", err
	}
	// Note: the hot path (a claim's first pass): nothing to count or reserve.
	if !Waiting(conds) && h.Spec.Capacity == nil && !h.Spec.Unschedulable && h.DeletionTimestamp.IsZero() {
		return "", nil
	}
	if err := a.API.Get(ctx, types.NamespacedName{Name: name}, h); err != nil {
		return "", err
	}
	others, counted, err := Bound(ctx, a.Cache, a.Options, name)
	if err != nil {
		return "", err
	}
	if why := Closed(h); why != "" {
		if h.DeletionTimestamp.IsZero() {
			return why + ": made once it is uncordoned", nil
		}
		return why + ": nothing new is made on it", nil
	}
	reserved := false
	used := Demand{}
	for _, res := range PruneExpired(h.Status.Reservations) {
		switch {
		case res.UID == p.UID:
			reserved = true
		case !counted[res.UID]:
			used.Add(reservationDemand(res))
		}
	}
	if counted[p.UID] {
		others.Sub(p.Need)
	}
	used.Add(others)
	if c := h.Spec.Capacity; c != nil && !within(c, used, p.Need) {
		return fmt.Sprintf("Docker host %s has no capacity left for it (%s): made once room frees", name, describe(h.Spec.Capacity, used)), nil
	}
	if counted[p.UID] || reserved {
		return "", nil
	}
	mem := p.Need.Memory.DeepCopy()
	h.Status.Reservations = append(PruneExpired(h.Status.Reservations), sandboxv1.Reservation{
		UID: p.UID, Object: p.Key, Sandboxes: p.Need.Sandboxes, Memory: &mem,
		Expires: metav1.NewTime(time.Now().Add(reservationTTL)),
	})
	return "", a.Client.Status().Update(ctx, h)
}

func reservationDemand(r sandboxv1.Reservation) Demand {
	d := Demand{Sandboxes: r.Sandboxes}
	if r.Memory != nil {
		d.Memory = r.Memory.DeepCopy()
	}
	return d
}

// within: used plus need stays within c.
func within(c *sandboxv1.DockerHostCapacity, used, need Demand) bool {
	if c.Sandboxes != nil && used.Sandboxes+need.Sandboxes > *c.Sandboxes {
		return false
	}
	if c.Memory != nil {
		total := used.Memory.DeepCopy()
		total.Add(need.Memory)
		return total.Cmp(*c.Memory) <= 0
	}
	return true
}

// describe is what c allows and what is used of it.
func describe(c *sandboxv1.DockerHostCapacity, used Demand) string {
	s := ""
	if c.Sandboxes != nil {
		s = fmt.Sprintf("sandboxes: %d of %d used", used.Sandboxes, *c.Sandboxes)
	}
	if c.Memory != nil {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("memory: %s of %s used", used.Memory.String(), c.Memory.String())
	}
	return s
}

// WaitingChanged passes the updates that start or end an object's wait to be
// admitted onto its host: they change what the host's allocation counts.
var WaitingChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return Waiting(conditionsOf(e.ObjectOld)) != Waiting(conditionsOf(e.ObjectNew))
	},
}

func conditionsOf(obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *sandboxv1.Sandbox:
		return o.Status.Conditions
	case *sandboxv1.SandboxPool:
		return o.Status.Conditions
	}
	return nil
}
