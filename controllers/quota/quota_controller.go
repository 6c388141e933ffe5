// Package quota is the SandboxQuota reconciler: it keeps each quota's status
// (hard, used, the summary kubectl shows) and the per-namespace metrics, and
// drops the admissions of objects that are gone (a release a manager missed:
// killed between teardown and its write, or a cache that had not seen the
// entry). Admission itself happens where objects are made (internal/quota).
package quota

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// resync is how often a quota is recounted besides on its objects' deletions.
const resync = 5 * time.Minute

// Reconciler keeps SandboxQuotas' status.
type Reconciler struct {
	client.Client
	// API reads around the cache: whether an admitted object is really gone.
	API client.Reader
}

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas/status,verbs=get;update;patch

// Reconcile recounts one quota.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	q := &sandboxv1.SandboxQuota{}
	if err := r.Get(ctx, req.NamespacedName, q); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := q.Status.DeepCopy()
	gone := map[types.UID]bool{}
	for _, a := range q.Status.Admitted {
		exists, err := r.exists(ctx, q.Namespace, a)
		if err != nil {
			return ctrl.Result{}, err
		}
		gone[a.UID] = !exists
	}
	quota.Drop(q, func(a sandboxv1.QuotaAdmission) bool { return gone[a.UID] })
	q.Status.ObservedGeneration = q.Generation
	observe(q)
	if !equality.Semantic.DeepEqual(before, &q.Status) {
		// Note: Update carries the resourceVersion read: an admission written
		// meanwhile makes this a conflict, and the recount runs again.
		if err := r.Status().Update(ctx, q); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: kit.ConflictRetry}, nil
			}
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: kit.Jitter(resync)}, nil
}

// exists says whether the admitted object is still there: the cache first, the
// API server to confirm an absence (the cache may not have seen it yet).
func (r *Reconciler) exists(ctx context.Context, ns string, a sandboxv1.QuotaAdmission) (bool, error) {
	var obj client.Object = &sandboxv1.Sandbox{}
	if a.Kind == "SandboxPool" {
		obj = &sandboxv1.SandboxPool{}
	}
	key := types.NamespacedName{Namespace: ns, Name: a.Name}
	if err := r.Get(ctx, key, obj); err == nil && obj.GetUID() == a.UID {
		return true, nil
	}
	err := r.API.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return obj.GetUID() == a.UID, nil
}

// SetupWithManager recounts a quota when it changes and when a Sandbox or pool
// of its namespace is deleted.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	deleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandboxquota").
		// Note: status changes too, so that the metrics follow each admission.
		For(&sandboxv1.SandboxQuota{}).
		Watches(&sandboxv1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(r.quotasOf), builder.WithPredicates(deleted)).
		Watches(&sandboxv1.SandboxPool{}, handler.EnqueueRequestsFromMapFunc(r.quotasOf), builder.WithPredicates(deleted)).
		WithOptions(kit.Paced(controller.Options{})).
		Complete(r)
}

// quotasOf maps an object to the quotas of its namespace.
func (r *Reconciler) quotasOf(ctx context.Context, obj client.Object) []reconcile.Request {
	var list sandboxv1.SandboxQuotaList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, q := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&q)})
	}
	return out
}
