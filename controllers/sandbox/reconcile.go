// Package sandbox is the Sandbox reconciler of one Docker host (this file and
// its steps): the host it is bound to, its lifetime (ttl, owner tracking), its
// credentials Secret, each service (observed, made, probed, or claimed from a
// warm pool), one status publish per pass, and its teardown; and the Docker
// event watch that re-queues it.
package sandbox

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/apiclock"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/poolkey"
)

// Reconciler drives the Docker host toward each Sandbox.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache where a stale read could do harm (who owns a
	// container name, whether the Secret exists).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Driver    dd.Driver
	Recorder  events.EventRecorder
	Options   options.Options
	// MaxConcurrentReconciles bounds the workers (default 16).
	MaxConcurrentReconciles int

	// Scope is the DockerHost this reconciler drives: it sees only the
	// Sandboxes bound to it (spec.dockerHost), and acts while this replica holds it.
	Scope lease.Scope
	// Live tracks the passes in flight for the liveness check (one per manager).
	Live *kit.Passes

	// Events is the Docker host's event stream, and identity proves which host it
	// is; both shared with the sweep.
	Events   *eventhub.Shared
	Identity *host.Identity
	Host     *host.Host
	cpus     hostCPUs
	requeue  chan event.TypedGenericEvent[*sandboxv1.Sandbox]
	// own remembers this manager's Docker actions, whose events re-queue nothing.
	own *ownActions
	// memory keeps each Sandbox's backoff and probe attempts between passes.
	memory *memory
	// names are the names this replica's passes took on the host (names.go).
	names nameBook
	// secrets watches the foreign Secrets that stall Sandboxes.
	secrets *foreignSecrets
	// claims are the claim records this manager wrote lately; poolKeys derive
	// pool members' passwords; pokePool asks a pool to refill.
	claims   claim.Recent
	PoolKeys *poolkey.Keys
	PokePool func(types.NamespacedName)
	// Clock is the API server's clock, which ttl and the owner's window are
	// judged on (nil: this process's own).
	Clock *apiclock.Clock
	// Observe is told the outcome of every pass (Setup.ObservePass).
	Observe func(ctrl.Request, ctrl.Result, error)
}

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads like the table of contents of one pass: the Docker host it is
// bound to, the lifetime verdict, then credentials, then services, then one
// publish. Each step returns early when its condition already holds.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.Scope.Gone() {
		return ctrl.Result{}, r.hostGone(ctx, req)
	}
	if !r.Scope.Active() {
		return ctrl.Result{}, nil // the replica that holds the host's Lease acts
	}
	sb := &sandboxv1.Sandbox{}
	if err := r.Get(ctx, req.NamespacedName, sb); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Note: an owned Secret's event reaches every host's queue; only the Sandbox's host acts.
	if sb.Spec.DockerHost != r.Scope.Name {
		return ctrl.Result{}, nil
	}
	ctx = logf.IntoContext(ctx, logf.FromContext(ctx).WithValues("agentID", sb.Spec.AgentID))
	r.memory.current(sb)
	ctx = r.memory.startPass(ctx, sb)
	defer endPass(ctx)
	if !sb.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, sb)
	}
	// Note: the finalizer is persisted before anything exists on the Docker host.
	if err := kit.EnsureFinalizer(ctx, r.Client, sb, Finalizer); err != nil {
		return ctrl.Result{}, err
	}
	if result, onHost, err := r.reconcileDockerHost(ctx, sb); !onHost || err != nil {
		return result, err
	}
	before := sb.DeepCopy()
	if p, ok := ctx.Value(passKey{}).(*pass); ok && p.unbound.Load() {
		before.Status.DockerHost = nil // every status write of the pass carries the binding
	}
	life, err := r.reconcileLifetime(ctx, sb)
	if err != nil || life.ended {
		return ctrl.Result{}, errors.Join(err, r.writeStatus(ctx, before, sb))
	}
	result, creds, err := r.provision(ctx, before, sb)
	if perr := r.publish(ctx, before, sb, creds); perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	if result, err = withOwnerDeadline(result, err, life.ownerLeft); err != nil {
		return ctrl.Result{}, err
	}
	result.RequeueAfter = kit.Soonest(result.RequeueAfter, life.ttlLeft)
	return r.memory.pace(ctx, sb, result), nil
}

// provision checks its namespace's policy allows the host, that the host and
// its quotas take what it asks, reads or creates the credentials, then drives
// every service. A refused growth of a Sandbox that runs leaves what runs as
// it is (its services are still observed and probed). before is the status the
// pass's writes patch from.
func (r *Reconciler) provision(ctx context.Context, before, sb *sandboxv1.Sandbox) (ctrl.Result, *credentials, error) {
	if result, ok, err := r.allowedHere(ctx, sb); !ok || err != nil {
		return result, nil, err
	}
	v, err := r.admission(ctx, sb)
	switch {
	case err != nil || v.retry:
		return v.result, nil, err
	case v.why != "" && !v.held(sb, r):
		v.wait(sb)
		return v.result, nil, nil
	}
	creds, err := r.ensureSecret(ctx, sb)
	var conflict errSecretConflict
	key := types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name}
	switch {
	case errors.As(err, &conflict):
		stallAll(sb, sandboxv1.ReasonSecretConflict, err.Error())
		r.secrets.watch(key, conflict.name)
		return ctrl.Result{RequeueAfter: kit.Jitter(kit.StalledRecheck)}, nil, nil
	case err != nil:
		return ctrl.Result{}, nil, err
	}
	r.secrets.stop(key)
	if err := r.bindFirst(ctx, before, sb); err != nil {
		r.unreserve(ctx, creds.reserved)
		return ctrl.Result{}, nil, errors.Join(err, creds.made())
	}
	var held *verdict
	if v.why != "" {
		held = &v
	}
	result, err := r.reconcileServices(ctx, sb, creds, held)
	if held != nil {
		result.RequeueAfter = kit.Soonest(result.RequeueAfter, v.result.RequeueAfter)
	}
	return result, creds, err
}

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
	r.Host = host.New(r.Driver, r.Options.StopTimeout, pulls)
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
		// A credentials Secret deleted by hand is re-made at once. Note: as metadata
		// only (of the Secrets carrying SecretLabel: CacheOptions), so that what a
		// tenant puts in a Secret costs the manager nothing; its data is read from
		// the API server where it is needed.
		Owns(&corev1.Secret{}, builder.OnlyMetadata, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(r.requeue, &handler.TypedEnqueueRequestForObject[*sandboxv1.Sandbox]{})).
		// A SandboxPolicy changed may allow a pinned Sandbox's host.
		Watches(&sandboxv1.SandboxPolicy{}, handler.EnqueueRequestsFromMapFunc(r.stalledByPolicy)).
		// So may new labels on this host; its cordon lifted, capacity raised or
		// freed admits the Sandboxes waiting for it.
		Watches(&sandboxv1.DockerHost{}, handler.EnqueueRequestsFromMapFunc(r.waitingForHost), builder.WithPredicates(
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == r.Scope.Name }))).
		// A ConfigMap of init scripts made or changed seeds its Sandboxes anew.
		// Note: as metadata only; the scripts are read where they are needed.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.initSources), builder.OnlyMetadata).
		// A quota's room freed (or raised) admits the Sandboxes waiting for it.
		Watches(&sandboxv1.SandboxQuota{}, handler.EnqueueRequestsFromMapFunc(r.waitingForQuota)).
		// A Sandbox gone frees its names for the Sandboxes waiting for them.
		Watches(&sandboxv1.Sandbox{}, handler.Funcs{DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for _, req := range r.sharingNames(ctx, e.Object) {
				q.Add(req)
			}
		}}).
		WithOptions(kit.Paced(r.Scope.Options(r.MaxConcurrentReconciles))).
		WithLogConstructor(lease.HostLogger(mgr, "sandbox", r.Scope.Name)).
		Named("sandbox").
		Complete(r.Live.Wrap(kit.Observed(r, r.Observe)))
}

// ForgetHost drops what the reconciler knows of its host beyond what it lists
// again: the host's Lease was given up, and another replica may drive it
// meanwhile (its members claimed, its containers changed, its Sandboxes'
// backoffs moot).
func (r *Reconciler) ForgetHost() {
	r.memory.reset()
	r.names.reset()
	r.claims.Reset()
	r.Host.Warm().Reset()
	r.Identity.Forget()
}

// now is the API server's time: the clock persisted times were written on.
func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// forget drops what the reconciler keeps of a Sandbox that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.memory.forget(key)
	r.names.release(key)
	r.secrets.stop(key)
}

// wake re-queues the Sandbox a finished pull waited for (its key's string form).
func (r *Reconciler) wake(waiter string) {
	ns, name, err := cache.SplitMetaNamespaceKey(waiter)
	if err == nil {
		r.Enqueue(types.NamespacedName{Namespace: ns, Name: name})
	}
}

// Enqueue re-queues one Sandbox from outside the API server's watch (a finished
// pull, a Docker event).
func (r *Reconciler) Enqueue(key types.NamespacedName) {
	sb := &sandboxv1.Sandbox{}
	sb.Namespace, sb.Name = key.Namespace, key.Name
	r.requeue <- event.TypedGenericEvent[*sandboxv1.Sandbox]{Object: sb}
}

// ownerName is the owner container recorded on the service containers.
func (r *Reconciler) ownerName(sb *sandboxv1.Sandbox) string { return r.Options.OwnerName(sb) }
