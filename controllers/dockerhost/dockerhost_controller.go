package dockerhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// hostProbeInterval is how often a DockerHost's daemon is pinged and its
// allocation counted again.
const hostProbeInterval = 30 * time.Second

// Reconciler keeps each DockerHost driven: its controllers set up (the
// daemon dialled), its daemon's identity and health in status, its allocation
// counted, and a deletion held until nothing is bound to it.
type Reconciler struct {
	client.Client
	API   client.Reader
	Fleet Fleet
	// Options are the operator's settings (what a Sandbox's services take);
	// userAgent is what the manager calls itself to the daemons it dials.
	Options   options.Options
	UserAgent string
	// Implicit is the DockerHost the manager's own --docker-host drives ("": none).
	Implicit string
	// Dial replaces connecting to an endpoint (Setup.Dial).
	Dial func(ctx context.Context, h *sandboxv1.DockerHost) (dd.Driver, error)

	// probed is when each host's daemon was last asked (by name), with the
	// generation it was asked for: the passes a Sandbox's bind or release
	// brings count the allocation only, so a burst of claims does not ping
	// the daemon it is busy with.
	probedMu sync.Mutex
	probed   map[string]probe
}

type probe struct {
	at         time.Time
	generation int64
	// meta is the host's labels and annotations when asked: an operator who
	// labels or annotates a DockerHost has its daemon asked at once.
	meta string
}

func metaOf(h *sandboxv1.DockerHost) string { return fmt.Sprint(h.Labels, h.Annotations) }

// Reconcile observes one DockerHost.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &sandboxv1.DockerHost{}
	if err := r.Get(ctx, req.NamespacedName, h); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.retire(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	hs, setErr := r.ensureSet(ctx, h)
	if hs != nil {
		hs.Revive(ctx)
	}
	if !r.Fleet.Holds(h.Name) {
		return ctrl.Result{RequeueAfter: kit.Jitter(hostProbeInterval)}, nil // its holder observes it
	}
	before := h.DeepCopy()
	bound, err := r.allocation(ctx, h)
	if err != nil {
		return ctrl.Result{}, err
	}
	if done, err := r.finalize(ctx, h, bound); done || err != nil {
		return ctrl.Result{RequeueAfter: hostProbeInterval}, err
	}
	switch {
	case setErr != nil:
		kit.SetCondition(h, sandboxv1.ConditionReady, metav1.ConditionFalse, hostErrorReason(setErr), kit.Cut(setErr.Error(), kit.NoteLimit))
	case r.probeDue(h):
		r.observe(ctx, h, hs)
		r.requeueOnTurn(ctx, before, h, hs)
		r.noteProbe(h)
	}
	if m := r.Fleet.Manager(); m != "" {
		h.Status.Manager = m
	}
	schedulable(h)
	h.Status.ObservedGeneration = h.Generation
	// Note: conditional on the resourceVersion the allocation was counted against.
	if err := kit.PatchStatus(ctx, r.Client, before, h, client.MergeFromWithOptimisticLock{}); apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: kit.ConflictRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: kit.Jitter(hostProbeInterval)}, nil
}

// probeDue says whether h's daemon is to be asked this pass: it was not asked
// for h's generation, labels and annotations, did not answer, or was asked longer than most of the
// probe interval ago (the periodic pass always asks).
func (r *Reconciler) probeDue(h *sandboxv1.DockerHost) bool {
	r.probedMu.Lock()
	defer r.probedMu.Unlock()
	p, ok := r.probed[h.Name]
	return !ok || p.generation != h.Generation || p.meta != metaOf(h) || time.Since(p.at) > hostProbeInterval/2 ||
		!meta.IsStatusConditionTrue(h.Status.Conditions, sandboxv1.ConditionReady)
}

func (r *Reconciler) noteProbe(h *sandboxv1.DockerHost) {
	r.probedMu.Lock()
	defer r.probedMu.Unlock()
	if r.probed == nil {
		r.probed = map[string]probe{}
	}
	r.probed[h.Name] = probe{at: time.Now(), generation: h.Generation, meta: metaOf(h)}
}

// retire stops the controllers of a DockerHost that is gone, once the API
// server confirms it (a cache can lag behind a create).
func (r *Reconciler) retire(ctx context.Context, name string) error {
	err := r.API.Get(ctx, client.ObjectKey{Name: name}, &sandboxv1.DockerHost{})
	if apierrors.IsNotFound(err) {
		r.Fleet.Retire(ctx, name)
		return nil
	}
	return err
}

// finalize keeps the in-use finalizer on a host objects are bound to; a host
// being deleted keeps it, and serves them, until they are gone (done: nothing else
// to do this pass).
func (r *Reconciler) finalize(ctx context.Context, h *sandboxv1.DockerHost, bound int32) (done bool, err error) {
	if h.DeletionTimestamp.IsZero() {
		return false, kit.EnsureFinalizer(ctx, r.Client, h, sandboxv1.DockerHostFinalizer)
	}
	if bound > 0 && !chaosplant.Active(chaosplant.HostGoesWhileBound) {
		return false, nil // served until its Sandboxes and pools go
	}
	return true, kit.RemoveFinalizer(ctx, r.Client, h, sandboxv1.DockerHostFinalizer)
}

// observe pings the daemon and proves its identity.
func (r *Reconciler) observe(ctx context.Context, h *sandboxv1.DockerHost, hs DrivenHost) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	info, err := hs.Driver().Ping(pctx)
	if err != nil {
		kit.SetCondition(h, sandboxv1.ConditionReady, metav1.ConditionFalse, hostErrorReason(err), kit.Cut(fmt.Sprintf("the daemon does not answer: %v", err), kit.NoteLimit))
		return
	}
	h.Status.Daemon = daemonInfo(info)
	id, err := hs.ProveHost(pctx)
	if err != nil {
		kit.SetCondition(h, sandboxv1.ConditionReady, metav1.ConditionFalse, hostErrorReason(err),
			kit.Cut(fmt.Sprintf("the daemon answers, but its identity is not proven: %v", err), kit.NoteLimit))
		return
	}
	h.Status.Identity = kit.HostStatus(id)
	kit.SetCondition(h, sandboxv1.ConditionReady, metav1.ConditionTrue, sandboxv1.ReasonReachable,
		fmt.Sprintf("Docker %s answers; identity %s", info.ServerVersion, id.ID))
}

// requeueOnTurn re-queues the Sandboxes bound to h when its daemon has just
// stopped answering, or answers again (Ready True before this pass and False now,
// or the reverse). A settled Sandbox is otherwise looked at again only after the
// resync period or once the host's event stream resyncs, and would report Ready
// all the while its host is down; one backing off from Docker being down would
// wait out its backoff (up to 5 minutes) once it is back.
func (r *Reconciler) requeueOnTurn(ctx context.Context, before, h *sandboxv1.DockerHost, hs DrivenHost) {
	was := meta.FindStatusCondition(before.Status.Conditions, sandboxv1.ConditionReady)
	is := meta.FindStatusCondition(h.Status.Conditions, sandboxv1.ConditionReady)
	if was == nil || is == nil || was.Status == is.Status {
		return
	}
	keys, err := index.BoundTo(ctx, r.Client, h.Name)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Listing the Sandboxes of a Docker host that went down or came back")
		return
	}
	for _, key := range keys {
		hs.Enqueue(key)
	}
}

// pingTimeout bounds one ping of a DockerHost's daemon.
const pingTimeout = 3 * time.Second

func daemonInfo(info dd.ServerInfo) *sandboxv1.DaemonInfo {
	d := &sandboxv1.DaemonInfo{Version: info.ServerVersion, APIVersion: info.APIVersion, OS: info.OS, Arch: info.Arch, CPUs: int32(info.NCPU)}
	if info.MemTotal > 0 {
		d.Memory = resource.NewQuantity(info.MemTotal, resource.BinarySI)
	}
	return d
}

func schedulable(h *sandboxv1.DockerHost) {
	switch {
	case !h.DeletionTimestamp.IsZero():
		kit.SetCondition(h, sandboxv1.ConditionSchedulable, metav1.ConditionFalse, sandboxv1.ReasonHostDeleting,
			fmt.Sprintf("being deleted: nothing new is placed; it is kept, and serves what is bound to it (%d), until that is gone", h.Status.Allocated.Sandboxes))
	case h.Spec.Unschedulable:
		kit.SetCondition(h, sandboxv1.ConditionSchedulable, metav1.ConditionFalse, sandboxv1.ReasonCordoned,
			"cordoned (spec.unschedulable): nothing new is placed; what is bound to it stays and is served")
	default:
		kit.SetCondition(h, sandboxv1.ConditionSchedulable, metav1.ConditionTrue, sandboxv1.ReasonSchedulable, "placement may use it")
	}
}

func hostErrorReason(err error) string {
	if errors.Is(err, errInsecure) {
		return sandboxv1.ReasonInsecureEndpoint
	}
	return kit.HostReason(err)
}

// SetupWithManager watches DockerHosts, and the binding, deletion and
// admission (capacity.WaitingChanged) of Sandboxes and pools, which change a
// host's allocation.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toHost := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		if name := index.DockerHostOf(obj); name != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dockerhost").
		For(&sandboxv1.DockerHost{}).
		Watches(&sandboxv1.Sandbox{}, toHost, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, capacity.WaitingChanged))).
		Watches(&sandboxv1.SandboxPool{}, toHost, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, capacity.WaitingChanged))).
		WatchesRawSource(source.Channel(r.Fleet.Taken(), &handler.TypedEnqueueRequestForObject[*sandboxv1.DockerHost]{})).
		WithOptions(kit.Paced(mgr, controller.Options{MaxConcurrentReconciles: 4, NeedLeaderElection: ptr.To(r.Fleet.Manager() == "")})).
		Complete(r)
}
