// Package quota is the SandboxQuota reconciler: it recounts each quota's used
// from its namespace's objects (what each one's status.admitted records), keeps
// hard, the summary kubectl shows and the per-namespace metrics, and drops the
// admissions in flight that their objects recorded or that are gone (a release
// a manager missed: killed between teardown and its write, or a cache that had
// not seen the entry). Admission itself happens where objects are made
// (internal/quota).
package quota

import (
	"context"
	"time"

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
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// resync is how often a quota is recounted besides on its objects' deletions.
const resync = 5 * time.Minute

// Reconciler keeps SandboxQuotas' status.
type Reconciler struct {
	client.Client
	// API reads around the cache: whether an admitted object is really gone.
	API client.Reader
	// Options give what an object takes that sets no amount itself (the
	// operator's default memory).
	Options options.Options
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
	objects, err := r.objects(ctx, q.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	changed, err := quota.Recount(q, objects, func(a sandboxv1.QuotaAdmission) (bool, error) {
		exists, err := r.exists(ctx, q.Namespace, a)
		return !exists, err
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	observe(q)
	if changed {
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

// objects are the namespace's Sandboxes and pools (as the cache shows them:
// an entry in flight counts an object the cache has not seen yet), each at
// what its status records.
func (r *Reconciler) objects(ctx context.Context, ns string) ([]quota.Object, error) {
	var sandboxes sandboxv1.SandboxList
	if err := r.List(ctx, &sandboxes, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var pools sandboxv1.SandboxPoolList
	if err := r.List(ctx, &pools, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := make([]quota.Object, 0, len(sandboxes.Items)+len(pools.Items))
	for i := range sandboxes.Items {
		sb := &sandboxes.Items[i]
		out = append(out, quota.Object{UID: sb.UID, Recorded: quota.RecordedSandbox(r.Options, sb)})
	}
	for i := range pools.Items {
		pool := &pools.Items[i]
		out = append(out, quota.Object{UID: pool.UID, Recorded: quota.RecordedPool(r.Options, pool)})
	}
	return out, nil
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

// SetupWithManager recounts a quota when it changes, and when a Sandbox or pool
// of its namespace is deleted or records another admission (so that what an
// object frees, shrinking or gone, is free at once, and entries in flight are
// dropped once recorded: the quota does not grow with its objects).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	freed := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  capacity.AdmittedChanged,
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandboxquota").
		// Note: status changes too, so that the metrics follow each admission.
		For(&sandboxv1.SandboxQuota{}).
		Watches(&sandboxv1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(r.quotasOf), builder.WithPredicates(freed)).
		Watches(&sandboxv1.SandboxPool{}, handler.EnqueueRequestsFromMapFunc(r.quotasOf), builder.WithPredicates(freed)).
		WithOptions(kit.Paced(mgr, controller.Options{})).
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
