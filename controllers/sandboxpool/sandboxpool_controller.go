package sandboxpool

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/admission"
	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/poolkey"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// PoolFinalizer holds a SandboxPool until its unclaimed members are gone.
const PoolFinalizer = "sandbox.roboco.io/pool-teardown"

// Reconciler keeps each SandboxPool's unclaimed members started, probed and
// offered to claims on its Docker host (the pool's host is the reconciler's:
// host, never a global), and removes the outdated, the old and the surplus.
type Reconciler struct {
	client.Client
	// API reads around the cache (a quota's current resourceVersion).
	API      client.Reader
	Recorder events.EventRecorder
	// Class resolves the members' class as the host's Sandboxes' services
	// are (the same operator settings and limits, so a member's class
	// matches the Sandboxes that claim it); Identity proves which Docker
	// host this is.
	Class    *class.Resolver
	Identity *host.Identity
	Options  options.Options
	Host     *host.Host
	Keys     *poolkey.Keys
	// Scope is the DockerHost whose pools this reconciler keeps.
	Scope lease.Scope
	// Observe, when set, is told the outcome of every pass (tests).
	Observe func(req ctrl.Request, result ctrl.Result, err error)
	// refills bounds the members starting across pools, so that refills
	// never starve claims or cold provisioning of the Docker daemon.
	refills *slots
	requeue chan event.TypedGenericEvent[*sandboxv1.SandboxPool]

	mu       sync.Mutex
	ready    map[string]readyMember // by member ID
	failures map[types.UID]int
	starts   map[types.UID]*startFailure
}

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpools,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpools/finalizers,verbs=update

// Reconcile: the class, the members as they are, then removals, probes and
// creations, then the offer and the status.
func (p *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Note: once onHost proved the host, the pass's Docker calls reach that dial only.
	result, err := p.reconcile(dd.WithProof(ctx), req)
	if p.Observe != nil {
		p.Observe(req, result, err)
	}
	return result, err
}

func (p *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if p.Scope.Gone() {
		return ctrl.Result{}, p.hostGone(ctx, req)
	}
	if !p.Scope.Active() {
		return ctrl.Result{}, nil
	}
	pool := &sandboxv1.SandboxPool{}
	if err := p.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pool.Spec.DockerHost != p.Scope.Name {
		return ctrl.Result{}, nil
	}
	if !pool.DeletionTimestamp.IsZero() {
		return p.reconcileDelete(ctx, pool)
	}
	if err := kit.EnsureFinalizer(ctx, p.Client, pool, PoolFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	before := pool.DeepCopy()
	result, err := p.fill(ctx, pool)
	if perr := p.patchStatus(ctx, before, pool); perr != nil && err == nil {
		err = perr
	}
	return result, err
}

// onHost binds the pool to the Docker host it fills (status.dockerHost), and
// says whether the manager talks to that host: on another, or on one it cannot
// prove, it makes, removes and offers nothing.
func (p *Reconciler) onHost(ctx context.Context, pool *sandboxv1.SandboxPool) (bool, time.Duration) {
	current, err := p.Identity.Prove(ctx)
	switch {
	case err != nil:
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, kit.HostReason(err), "cannot prove which Docker host this is: "+err.Error())
		return false, p.backoff(pool.UID)
	case pool.Status.DockerHost == nil:
		pool.Status.DockerHost = kit.HostStatus(current)
	case pool.Status.DockerHost.ID != current.ID:
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonWrongDockerHost,
			kit.WrongHostMessage(*pool.Status.DockerHost, current, "its members are not made, removed or offered here"))
		return false, kit.Jitter(kit.HostRecheck)
	}
	return true, 0
}

// fill drives the members one step and sets the status.
func (p *Reconciler) fill(ctx context.Context, pool *sandboxv1.SandboxPool) (ctrl.Result, error) {
	// Note: what this pass lists is stale once the host's Lease is lost.
	epoch := p.Host.Warm().Epoch()
	if ok, retry := p.onHost(ctx, pool); !ok {
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	key, err := p.Keys.Ensure(ctx, pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	class, err := p.Class.Member(ctx, pool, "")
	if err != nil {
		poolStalled(pool, err.Error())
		return ctrl.Result{RequeueAfter: kit.Jitter(kit.StalledRecheck)}, nil
	}
	ms, err := p.members(ctx, pool, class)
	if err != nil {
		poolDockerDown(pool, err)
		return ctrl.Result{RequeueAfter: p.backoff(pool.UID)}, nil
	}
	if err := p.removeUnwanted(ctx, pool, ms); err != nil {
		poolDockerDown(pool, err)
		return ctrl.Result{RequeueAfter: p.backoff(pool.UID)}, nil
	}
	probeAgain, late := p.probeStarting(ctx, class, key, &ms)
	if err := p.removeLate(ctx, pool, &ms, late); err != nil {
		poolDockerDown(pool, err)
		return ctrl.Result{RequeueAfter: p.backoff(pool.UID)}, nil
	}
	wanted := ms.missing
	v, err := p.admit(ctx, pool, &ms)
	if err != nil {
		return ctrl.Result{}, err
	}
	created, err := p.create(ctx, pool, key, ms)
	p.offer(epoch, pool, class, key, ms)
	setPoolStatus(pool, ms, created)
	say(pool, v)
	if v.Policy != "" {
		return ctrl.Result{RequeueAfter: kit.Jitter(kit.StalledRecheck)}, nil
	}
	p.reportStarts(pool)
	if err != nil {
		poolDockerDown(pool, err)
		return ctrl.Result{RequeueAfter: p.backoff(pool.UID)}, nil
	}
	p.succeeded(pool.UID)
	return ctrl.Result{RequeueAfter: p.nextPass(pool, &ms, created, wanted, probeAgain)}, nil
}

// patchStatus writes what the pass learned, stamped with the generation it saw.
func (p *Reconciler) patchStatus(ctx context.Context, before, pool *sandboxv1.SandboxPool) error {
	pool.Status.ObservedGeneration = pool.Generation
	return kit.PatchStatus(ctx, p.Client, before, pool)
}

// reconcileDelete removes the unclaimed members (claimed ones are their
// Sandboxes'), then lets the pool go; its key Secret goes with it (owned).
func (p *Reconciler) reconcileDelete(ctx context.Context, pool *sandboxv1.SandboxPool) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(pool, PoolFinalizer) {
		return ctrl.Result{}, nil
	}
	p.refills.forget(pool.UID)
	// Note: members on another host cannot be confirmed gone from here.
	before := pool.DeepCopy()
	if ok, retry := p.onHost(ctx, pool); !ok {
		return ctrl.Result{RequeueAfter: retry}, p.patchStatus(ctx, before, pool)
	}
	if n := p.Host.CancelMemberCreates(memberPrefix(pool)); n > 0 {
		// Note: each end removes what it made, and wakes the pool.
		return ctrl.Result{RequeueAfter: memberCreateRecheck}, nil
	}
	ms, err := p.list(ctx, pool)
	if err != nil {
		return ctrl.Result{RequeueAfter: p.backoff(pool.UID)}, nil
	}
	for _, c := range ms {
		if !host.IsMemberName(c.Name) {
			continue
		}
		if err := p.Host.Remove(ctx, c.ID); err != nil {
			return ctrl.Result{RequeueAfter: p.backoff(pool.UID)}, nil
		}
	}
	p.Host.Warm().Forget(string(pool.UID), nil)
	p.Host.ReleaseSeedLanes(laneKind, pool.Namespace, pool.Name, string(pool.UID))
	p.Keys.Forget(pool.UID)
	if err := quota.Release(ctx, p.Client, p.API, pool.Namespace, pool.UID); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, kit.RemoveFinalizer(ctx, p.Client, pool, PoolFinalizer)
}

// backoff is the pool's next retry delay after a failed Docker call.
func (p *Reconciler) backoff(uid types.UID) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures[uid]++
	return host.Delay(kit.RetryBackoff, p.failures[uid]-1)
}

func (p *Reconciler) succeeded(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.failures, uid)
}

// Poke re-queues a pool (a claim took a member, a member's container changed).
func (p *Reconciler) Poke(key types.NamespacedName) {
	pool := &sandboxv1.SandboxPool{}
	pool.Namespace, pool.Name = key.Namespace, key.Name
	select {
	case p.requeue <- event.TypedGenericEvent[*sandboxv1.SandboxPool]{Object: pool}:
	default: // a full queue re-queues the pools anyway
	}
}

// SetupWithManager registers the pool controller; refills bounds the members
// starting at once across pools.
func (p *Reconciler) SetupWithManager(mgr ctrl.Manager, refills int) error {
	if refills <= 0 {
		refills = 2
	}
	p.refills = newSlots(refills, p.Poke)
	p.requeue = make(chan event.TypedGenericEvent[*sandboxv1.SandboxPool], 1024)
	p.ready, p.failures, p.starts = map[string]readyMember{}, map[types.UID]int{}, map[types.UID]*startFailure{}
	if p.Recorder == nil {
		p.Recorder = kit.Bounded(mgr.GetEventRecorder("sandbox-controller"))
	}
	if p.API == nil {
		p.API = mgr.GetAPIReader()
	}
	p.Host.OnLaneGranted(laneKind, func(namespace, name string) {
		p.Poke(types.NamespacedName{Namespace: namespace, Name: name})
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&sandboxv1.SandboxPool{}, builder.WithPredicates(index.BoundToHost(p.Scope.Name))).
		WatchesRawSource(source.Channel(p.requeue, &handler.TypedEnqueueRequestForObject[*sandboxv1.SandboxPool]{})).
		// What waits on a policy, this host, a quota or an init ConfigMap.
		WatchesRawSource(admission.Waiters{Reader: p.Client, Host: p.Scope.Name, Kind: admission.KindPool}.Watches(mgr.GetCache())).
		WithOptions(kit.Paced(mgr, p.Scope.Options(2))).
		WithLogConstructor(lease.HostLogger(mgr, "sandboxpool", p.Scope.Name)).
		Named("sandboxpool").
		Complete(p)
}
