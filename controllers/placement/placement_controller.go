package placement

import (
	"context"
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/policy"
)

// unschedulableRecheck is how often an object no host fits is looked at again
// besides on DockerHost changes (an owner container may have started).
const unschedulableRecheck = 30 * time.Second

// Reconciler binds unbound Sandboxes to a DockerHost (spec.dockerHost): the one
// placement step of the manager, like a scheduler's bind.
type Reconciler struct {
	client.Client
	API client.Reader
	// Drivers reach the hosts this manager drives, to look for owner containers.
	Drivers Drivers
	Options options.Options
	// Workers bounds the Sandboxes placed at once (0: 1). Each placement is
	// API reads and one patch; a burst of creates waits on them before any claim.
	Workers int
}

// Drivers reaches the Docker hosts this manager drives, from any replica.
type Drivers interface {
	// Raw is the host name's driver, unfenced (reads only), if this manager drives it yet.
	Raw(name string) (dd.Driver, bool)
}

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts/finalizers,verbs=update

// Reconcile places one Sandbox.
func (pl *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sb := &sandboxv1.Sandbox{}
	if err := pl.Get(ctx, req.NamespacedName, sb); err != nil || sb.Spec.DockerHost != "" {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sb.DeletionTimestamp.IsZero() && sb.Status.DockerHost == nil {
		return ctrl.Result{}, nil // never placed, so nothing of it exists on any host
	}
	// Note: the teardown finalizer rides on the binding patch (optimistically
	// locked), so the host's first pass need not write it.
	return pl.place(ctx, sb, pl.sandboxPlaceable(sb), func(host string) {
		sb.Spec.DockerHost = host
		if sb.DeletionTimestamp.IsZero() {
			controllerutil.AddFinalizer(sb, sandboxv1.SandboxFinalizer)
		}
	},
		func(why string) error { return pl.unschedulable(ctx, sb, why) })
}

// place decides p's host and binds obj to it: the capacity reserved first, then
// spec.dockerHost set (bind) in a patch that fails if obj changed meanwhile. No
// fitting host: unschedulable says why, and it is looked at again.
func (pl *Reconciler) place(ctx context.Context, obj client.Object, p placeable, bind func(host string), unschedulable func(why string) error) (ctrl.Result, error) {
	var hosts sandboxv1.DockerHostList
	if err := pl.List(ctx, &hosts); err != nil {
		return ctrl.Result{}, err
	}
	allowed, err := policy.For(ctx, pl.Client, obj.GetNamespace())
	if err != nil {
		return ctrl.Result{}, err
	}
	p.policy = allowed
	d := pl.decide(ctx, p, hosts.Items)
	if d.host == "" {
		return ctrl.Result{RequeueAfter: kit.Jitter(unschedulableRecheck)}, unschedulable(d.why)
	}
	if err := pl.reserve(ctx, hosts.Items, d.host, p.Request); err != nil {
		if errors.Is(err, capacity.ErrNoRoom) || apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: kit.ConflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	bind(d.host)
	if err := pl.Patch(ctx, obj, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logf.FromContext(ctx).Info("Placed", "dockerHost", d.host)
	return ctrl.Result{}, nil
}

// reserve reserves r on the host name, which hosts (the cache's) holds; one the
// cache shows without capacity is not read live, so a claim's placement waits
// on no read: a capacity set meanwhile is judged by the host's admission
// (capacity.Admission takes the same shortcut).
func (pl *Reconciler) reserve(ctx context.Context, hosts []sandboxv1.DockerHost, name string, r capacity.Request) error {
	i := slices.IndexFunc(hosts, func(h sandboxv1.DockerHost) bool { return h.Name == name })
	if i >= 0 && hosts[i].Spec.Capacity == nil {
		return nil
	}
	return capacity.Reserve(ctx, pl.Client, pl.API, name, r)
}

func (pl *Reconciler) sandboxPlaceable(sb *sandboxv1.Sandbox) placeable {
	p := placeable{Request: capacity.Request{Key: sb.Namespace + "/" + sb.Name, UID: string(sb.UID), Need: capacity.OfSandbox(pl.Options, sb)},
		selector: sb.Spec.DockerHostSelector}
	if name, tracked := pl.Options.TrackedOwner(sb); tracked {
		p.owner = name
	}
	if sb.Status.DockerHost != nil {
		p.legacyID = sb.Status.DockerHost.ID
	}
	return p
}

// unschedulable says why no host fits, as a pod's PodScheduled does.
func (pl *Reconciler) unschedulable(ctx context.Context, sb *sandboxv1.Sandbox, why string) error {
	before := sb.DeepCopy()
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonUnschedulable, why)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, sandboxv1.ReasonUnschedulable, "waiting for a Docker host: "+why)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
	return lockedStatus(kit.PatchStatus(ctx, pl.Client, before, sb, client.MergeFromWithOptimisticLock{}))
}

// lockedStatus: placement's status writes replace the whole conditions list
// from the placement cache's copy, so they are conditional on its
// resourceVersion: a copy that lags (the object bound and published meanwhile)
// must not overwrite what its host wrote. A conflict is no error: the object's
// change re-queues it if it is still unbound.
func lockedStatus(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// SetupWithManager places unbound Sandboxes; a DockerHost's change re-queues every
// unbound one (a host added, uncordoned or freed may now fit).
func (pl *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	unbound := predicate.NewPredicateFuncs(func(obj client.Object) bool { return index.DockerHostOf(obj) == "" })
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-placement").
		For(&sandboxv1.Sandbox{}, builder.WithPredicates(unbound)).
		Watches(&sandboxv1.DockerHost{}, handler.EnqueueRequestsFromMapFunc(pl.unboundSandboxes), builder.WithPredicates(mayFitMore())).
		// A SandboxPolicy changed may allow more hosts.
		Watches(&sandboxv1.SandboxPolicy{}, handler.EnqueueRequestsFromMapFunc(pl.unboundSandboxes)).
		WithOptions(kit.Paced(mgr, controller.Options{MaxConcurrentReconciles: max(pl.Workers, 1)})).
		Complete(pl)
}

func (pl *Reconciler) unboundSandboxes(ctx context.Context, _ client.Object) []reconcile.Request {
	keys, err := index.BoundTo(ctx, pl.Client, "")
	if err != nil {
		logf.FromContext(ctx).Error(err, "Listing unbound Sandboxes")
		return nil
	}
	out := make([]reconcile.Request, 0, len(keys))
	for _, k := range keys {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName(k)})
	}
	return out
}
