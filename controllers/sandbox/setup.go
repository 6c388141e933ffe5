package sandbox

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/admission"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
)

// SetupWithManager registers the reconciler, its Docker event watch and its pull
// notifications with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.Options.Validate(); err != nil {
		return err
	}
	if err := r.defaults(mgr); err != nil {
		return err
	}
	r.requeue = make(chan event.TypedGenericEvent[*sandboxv1.Sandbox], 1024)
	pulls := host.NewPulls(r.Driver, r.wake, sandboxMetrics.observePull)
	perHost, perNamespace := r.Options.SeedLaneCaps()
	r.Host = host.New(r.Driver, r.Options.StopTimeout, pulls, host.WithSeedLanes(host.SeedLanes{PerHost: perHost, PerNamespace: perNamespace}))
	r.Host.OnLaneGranted(laneKind, r.poke)
	if err := mgr.Add(r.Scope.Runnable(func(ctx context.Context) error {
		pulls.Start(ctx)
		r.secrets.start(ctx)
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	if r.Events == nil {
		r.Events = eventhub.NewShared(r.Driver)
	}
	if r.Identity == nil {
		r.Identity = host.NewIdentity(r.Driver, host.DefaultIdentitySettle)
	}
	if err := r.setupDockerWatch(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		// Note: annotations too, for AnnotationReleaseDockerHost.
		For(&sandboxv1.Sandbox{}, builder.WithPredicates(index.BoundToHost(r.Scope.Name), predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// A credentials Secret deleted by hand is re-made at once; one made once its
		// Sandbox had left the cache may be a leftover (leftover.go). Note: as metadata
		// only (of the Secrets carrying SecretLabel: CacheOptions), so that what a
		// tenant puts in a Secret costs the manager nothing; its data is read from
		// the API server where it is needed.
		Owns(&corev1.Secret{}, builder.OnlyMetadata, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return r.ownerNotCached(e.Object) },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(r.requeue, &handler.TypedEnqueueRequestForObject[*sandboxv1.Sandbox]{})).
		// What waits on a policy, this host, a quota or an init ConfigMap.
		WatchesRawSource(admission.Waiters{Reader: r.Client, Host: r.Scope.Name, Kind: admission.KindSandbox}.Watches(mgr.GetCache())).
		// A Sandbox gone frees its names for the Sandboxes waiting for them.
		Watches(&sandboxv1.Sandbox{}, handler.Funcs{DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for _, req := range r.sharingNames(ctx, e.Object) {
				q.Add(req)
			}
		}}).
		WithOptions(kit.Paced(mgr, r.Scope.Options(r.MaxConcurrentReconciles))).
		WithLogConstructor(lease.HostLogger(mgr, "sandbox", r.Scope.Name)).
		Named("sandbox").
		Complete(kit.Observed(r, r.Observe))
}

// setupDockerWatch adds the Docker event watch of the reconciler's host to the manager.
func (r *Reconciler) setupDockerWatch(mgr ctrl.Manager) error {
	return mgr.Add(&dockerWatch{events: r.Events, own: r.own, reader: mgr.GetCache(), enqueue: r.Enqueue, host: r.Scope.Name, leaderOnly: r.Scope.LeaderOnly,
		enqueuePool: func(k types.NamespacedName) { r.PokePool(k) }, forgetHost: r.Identity.Forget, retryNow: r.recalls.retryNow})
}
