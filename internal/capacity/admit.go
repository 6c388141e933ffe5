package capacity

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
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

// Waiting says an object bound to a host waits to be admitted onto it: it
// made nothing there and holds no room, so the host's allocation does not
// count it and it does not keep a host being deleted. Any object whose Ready
// condition says Unschedulable (its host refused it) waits; so does a Sandbox
// with no record (status.admitted) that made nothing, refused by its
// namespace's policies (Stalled PolicyViolation) or quotas (Ready
// QuotaExceeded). A pool they refused may have members running: it counts.
func Waiting(obj client.Object) bool {
	conds := conditionsOf(obj)
	ready := meta.FindStatusCondition(conds, sandboxv1.ConditionReady)
	if ready != nil && ready.Reason == sandboxv1.ReasonUnschedulable {
		return true
	}
	sb, ok := obj.(*sandboxv1.Sandbox)
	if !ok || sb.Status.Admitted != nil || MadeAnything(sb) {
		return false
	}
	stalled := meta.FindStatusCondition(conds, sandboxv1.ConditionStalled)
	return ready != nil && ready.Reason == sandboxv1.ReasonQuotaExceeded ||
		stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Reason == sandboxv1.ReasonPolicyViolation
}

// MadeAnything: a container or a claimed member of sb is recorded.
func MadeAnything(sb *sandboxv1.Sandbox) bool {
	for _, s := range sb.Status.Services {
		if s.ContainerID != "" {
			return true
		}
	}
	return len(sb.Status.Claims) > 0
}

// Bound is what the cache shows bound to the host name: the Sandboxes and pools
// that do not wait to be admitted, their amounts summed, and each one's amount
// by UID. An object counts at what it was admitted to (status.admitted), or,
// with no record yet, at its spec's demand.
func Bound(ctx context.Context, r client.Reader, o options.Options, name string) (Demand, map[string]Demand, error) {
	var sandboxes sandboxv1.SandboxList
	if err := r.List(ctx, &sandboxes, client.MatchingFields{index.DockerHost: name}); err != nil {
		return Demand{}, nil, err
	}
	var pools sandboxv1.SandboxPoolList
	if err := r.List(ctx, &pools, client.MatchingFields{index.DockerHost: name}); err != nil {
		return Demand{}, nil, err
	}
	var total Demand
	counted := map[string]Demand{}
	count := func(uid string, d Demand) {
		counted[uid] = d
		total.Add(d)
	}
	for i := range sandboxes.Items {
		if sb := &sandboxes.Items[i]; !Waiting(sb) {
			count(string(sb.UID), orDemand(sb.Status.Admitted, OfSandbox(o, sb)))
		}
	}
	for i := range pools.Items {
		if pool := &pools.Items[i]; !Waiting(pool) {
			count(string(pool.UID), orDemand(pool.Status.Admitted, OfPool(o, pool)))
		}
	}
	return total, counted, nil
}

// OfAdmitted is what an admission record takes of a host (a pool's members
// count as Sandboxes).
func OfAdmitted(a *sandboxv1.Admitted) Demand {
	d := Demand{Sandboxes: a.Sandboxes + a.PoolMembers}
	if a.Memory != nil {
		d.Memory = a.Memory.DeepCopy()
	}
	return d
}

func orDemand(a *sandboxv1.Admitted, d Demand) Demand {
	if a == nil {
		return d
	}
	return OfAdmitted(a)
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
// container there, or grow there.
type Admission struct {
	Client  client.Client // writes the host's reservations
	API     client.Reader // reads the host live
	Cache   client.Reader // lists what is bound to it
	Options options.Options
}

// Admit says why the host name does not take p, whose status conditions are
// conds, now ("" when it does). What p was admitted to before (p.Admitted)
// needs no judgement: a cordon, a deletion or a lowered capacity evicts
// nothing. What p takes beyond it (a new object, or one that grows) is judged:
// a host cordoned or being deleted takes nothing new, and one with capacity
// takes p only beside what is bound to it and reserved. It is idempotent. p
// leaves with a reservation of its whole need, which also keeps the host from
// being deleted under it, until the host's recount counts p at that need.
//
// No over-admission: the host is read live first, then the cache; p counts
// itself once whether or not the cache counts it. Each other object counts at
// the larger of what the cache counts it at and what it reserved: an object
// the cache counts at its need was admitted by a pass that already counted
// every object that entered the (one, shared) cache before it; one admitted
// since (new, or grown) holds a reservation, written with the host's
// resourceVersion, until the host's recount counts it.
func (a Admission) Admit(ctx context.Context, name string, p Request, waiting bool) (string, error) {
	if p.Admitted != nil && p.Admitted.Covers(p.Need) {
		return "", nil
	}
	h := &sandboxv1.DockerHost{}
	if err := a.Cache.Get(ctx, types.NamespacedName{Name: name}, h); err != nil {
		return "", err
	}
	// Note: the hot path (a claim's first pass): nothing to count or reserve.
	if !waiting && h.Spec.Capacity == nil && !h.Spec.Unschedulable && h.DeletionTimestamp.IsZero() {
		return "", nil
	}
	if err := a.API.Get(ctx, types.NamespacedName{Name: name}, h); err != nil {
		return "", err
	}
	if why := Closed(h); why != "" {
		if h.DeletionTimestamp.IsZero() {
			return why + ": made once it is uncordoned", nil
		}
		return why + ": nothing new is made on it", nil
	}
	_, counted, err := Bound(ctx, a.Cache, a.Options, name)
	if err != nil {
		return "", err
	}
	used, reserved := Demand{}, false
	byUID := maps.Clone(counted)
	for _, res := range PruneExpired(h.Status.Reservations) {
		if res.UID == p.UID {
			reserved = ReservationDemand(res).Covers(p.Need)
			continue
		}
		byUID[res.UID] = larger(byUID[res.UID], ReservationDemand(res))
	}
	delete(byUID, p.UID)
	for _, d := range byUID {
		used.Add(d)
	}
	if c := h.Spec.Capacity; c != nil && !within(c, used, p.Need) {
		return fmt.Sprintf("Docker host %s has no capacity left for it (%s): made once room frees", name, describe(h.Spec.Capacity, used)), nil
	}
	if d, ok := counted[p.UID]; reserved || ok && d.Covers(p.Need) {
		return "", nil
	}
	mem := p.Need.Memory.DeepCopy()
	h.Status.Reservations = append(slices.DeleteFunc(PruneExpired(h.Status.Reservations), func(r sandboxv1.Reservation) bool { return r.UID == p.UID }),
		sandboxv1.Reservation{UID: p.UID, Object: p.Key, Sandboxes: p.Need.Sandboxes, Memory: &mem,
			Expires: metav1.NewTime(time.Now().Add(reservationTTL))})
	return "", a.Client.Status().Update(ctx, h)
}

// ReservationDemand is what a reservation holds.
func ReservationDemand(r sandboxv1.Reservation) Demand {
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
// admitted onto its host, or change what it was admitted to: they change what
// the host's allocation counts.
var WaitingChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return Waiting(e.ObjectOld) != Waiting(e.ObjectNew) || AdmittedChanged(e)
	},
}

// AdmittedChanged: the update changes the object's status.admitted.
func AdmittedChanged(e event.UpdateEvent) bool {
	return !equality.Semantic.DeepEqual(AdmittedOf(e.ObjectOld), AdmittedOf(e.ObjectNew))
}

// AdmittedOf is the status.admitted of a Sandbox or pool (nil for anything else).
func AdmittedOf(obj client.Object) *sandboxv1.Admitted {
	switch o := obj.(type) {
	case *sandboxv1.Sandbox:
		return o.Status.Admitted
	case *sandboxv1.SandboxPool:
		return o.Status.Admitted
	}
	return nil
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
