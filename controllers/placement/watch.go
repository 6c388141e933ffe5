package placement

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
)

// mayFitMore passes the DockerHost changes after which an object that fitted
// nowhere may fit: a host added or gone, its spec or labels changed, its
// conditions or identity changed, or less used on it. Not what only fills it
// (a binding counted, a reservation taken): under a burst every bind changes a
// host's status, and re-queueing every unbound object on each made placement
// look at each of them about twice. An object no host fits is looked at again
// every unschedulableRecheck anyway.
func mayFitMore() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok := e.ObjectOld.(*sandboxv1.DockerHost)
		cur, ok2 := e.ObjectNew.(*sandboxv1.DockerHost)
		if !ok || !ok2 {
			return true
		}
		return old.Generation != cur.Generation ||
			!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
			!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
			!conditionsEqual(old.Status.Conditions, cur.Status.Conditions) ||
			!equality.Semantic.DeepEqual(old.Status.Identity, cur.Status.Identity) ||
			lessUsed(capacity.Used(*old), capacity.Used(*cur))
	}}
}

// lessUsed: after holds fewer Sandboxes or less memory than before.
func lessUsed(before, after capacity.Demand) bool {
	return after.Sandboxes < before.Sandboxes || after.Memory.Cmp(before.Memory) < 0
}

// conditionsEqual compares conditions by type, status and reason: what
// placement reads of them.
func conditionsEqual(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason
	})
}
