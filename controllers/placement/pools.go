package placement

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// PoolReconciler binds unbound SandboxPools as Reconciler binds Sandboxes: its members
// (spec.replicas of them) count against the host's capacity.
type PoolReconciler struct{ *Reconciler }

// Reconcile places one SandboxPool.
func (pp PoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &sandboxv1.SandboxPool{}
	if err := pp.Get(ctx, req.NamespacedName, pool); err != nil || pool.Spec.DockerHost != "" || !pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	p := placeable{Request: capacity.Request{Key: pool.Namespace + "/" + pool.Name, UID: string(pool.UID), Need: capacity.OfPool(pp.Options, pool)},
		selector: pool.Spec.DockerHostSelector}
	if pool.Status.DockerHost != nil {
		p.legacyID = pool.Status.DockerHost.ID
	}
	return pp.place(ctx, pool, p, func(host string) { pool.Spec.DockerHost = host },
		func(why string) error { return pp.poolUnschedulable(ctx, pool, why) })
}

func (pp PoolReconciler) poolUnschedulable(ctx context.Context, pool *sandboxv1.SandboxPool, why string) error {
	before := pool.DeepCopy()
	pool.Status.ObservedGeneration = pool.Generation
	kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonUnschedulable, why)
	return lockedStatus(kit.PatchStatus(ctx, pp.Client, before, pool, client.MergeFromWithOptimisticLock{}))
}

// SetupWithManager places unbound pools; a DockerHost's change re-queues them.
func (pp PoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	unbound := predicate.NewPredicateFuncs(func(obj client.Object) bool { return index.DockerHostOf(obj) == "" })
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandboxpool-placement").
		For(&sandboxv1.SandboxPool{}, builder.WithPredicates(unbound)).
		Watches(&sandboxv1.DockerHost{}, handler.EnqueueRequestsFromMapFunc(pp.unboundPools), builder.WithPredicates(mayFitMore())).
		Watches(&sandboxv1.SandboxPolicy{}, handler.EnqueueRequestsFromMapFunc(pp.unboundPools)).
		WithOptions(kit.Paced(mgr, controller.Options{})).
		Complete(pp)
}

func (pp PoolReconciler) unboundPools(ctx context.Context, _ client.Object) []reconcile.Request {
	var list sandboxv1.SandboxPoolList
	if err := pp.List(ctx, &list, client.MatchingFields{index.DockerHost: ""}); err != nil {
		logf.FromContext(ctx).Error(err, "Listing unbound SandboxPools")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
	}
	return out
}
