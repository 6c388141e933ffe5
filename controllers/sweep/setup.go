package sweep

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
)

// SetupWithManager registers the sweep, its ticker and its Docker event stream.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.Options.Validate(); err != nil {
		return err
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Cache == nil {
		r.Cache = mgr.GetCache()
	}
	r.legacyOwners = map[string]bool{}
	r.ownerMissing = map[string]time.Time{}
	if r.Events == nil {
		r.Events = eventhub.NewShared(r.Driver)
	}
	if r.Identity == nil {
		r.Identity = host.NewIdentity(r.Driver, host.DefaultIdentitySettle)
	}
	toSweep := func(context.Context, *sandboxv1.Sandbox) []reconcile.Request {
		return []reconcile.Request{sweepRequest}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-sweep").
		// A Sandbox gone without its finalizer leaves orphans at once.
		WatchesRawSource(source.Kind(mgr.GetCache(), &sandboxv1.Sandbox{},
			handler.TypedEnqueueRequestsFromMapFunc(toSweep),
			predicate.TypedFuncs[*sandboxv1.Sandbox]{
				DeleteFunc: func(e event.TypedDeleteEvent[*sandboxv1.Sandbox]) bool {
					return e.Object.Spec.DockerHost == r.Scope.Name
				},
				CreateFunc:  func(event.TypedCreateEvent[*sandboxv1.Sandbox]) bool { return false },
				UpdateFunc:  func(event.TypedUpdateEvent[*sandboxv1.Sandbox]) bool { return false },
				GenericFunc: func(event.TypedGenericEvent[*sandboxv1.Sandbox]) bool { return false },
			})).
		WatchesRawSource(source.Func(r.startTriggers)).
		WithLogConstructor(lease.HostLogger(mgr, "sandbox-sweep", r.Scope.Name)).
		WithOptions(kit.Watched(mgr, controller.Options{
			SkipNameValidation:      ptr.To(true),
			NeedLeaderElection:      ptr.To(r.Scope.LeaderOnly),
			MaxConcurrentReconciles: 1,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, r.Options.SweepInterval),
		})).
		Complete(r)
}

// startTriggers is the sweep's source: a pass at start, then one every jittered
// SweepInterval, and one shortly after Docker events that can leave orphans or
// bring a legacy owner's grace period to its end. Started with the controller,
// so only on the leader.
func (r *Reconciler) startTriggers(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	events, err := r.Events.Subscribe(ctx, "sweep", sweepBuffer)
	if err != nil {
		return err
	}
	r.stream.subscribed()
	go func() {
		log := logf.FromContext(ctx).WithName("sweep-events")
		for ev := range events {
			switch {
			case ev.Type == dd.EventLost:
				r.stream.lost()
				r.Identity.Forget()
				log.Info("Docker events lost: sweeps remove nothing until the stream resyncs")
			case ev.Type == dd.EventResync:
				r.stream.resynced()
				q.Add(sweepRequest)
			case ev.Type != dd.EventDie && ev.Type != dd.EventDestroy:
			case host.IsSandboxContainer(ev.Labels) || r.isLegacyOwner(ev.Name):
				q.AddAfter(sweepRequest, sweepDebounce)
			}
		}
	}()
	go func() {
		q.Add(sweepRequest)
		for {
			t := time.NewTimer(kit.Jitter(r.Options.SweepInterval))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				q.Add(sweepRequest)
			}
		}
	}()
	return nil
}
