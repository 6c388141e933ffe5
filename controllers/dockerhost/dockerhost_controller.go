package dockerhost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
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
}

// Fleet is what the DockerHost controller needs of the controllers that drive
// each host (the manager's fleet implements it).
type Fleet interface {
	// Host is the host name's controllers, if this manager drives it yet.
	Host(name string) (DrivenHost, bool)
	// AddDialled sets up the controllers of a host on a driver dialled from its spec.
	AddDialled(name string, driver dd.Driver, endpoint, tlsVersion string) (DrivenHost, error)
	// Holds says whether this replica acts on the host name now.
	Holds(name string) bool
	// Manager names this replica when replicas share the hosts by Leases ("": they do not).
	Manager() string
	// Taken tells of each host this replica just took.
	Taken() <-chan event.TypedGenericEvent[*sandboxv1.DockerHost]
}

// DrivenHost is one host's controllers, as the DockerHost controller sees them.
type DrivenHost interface {
	// Driver is the host's driver as its controllers use it.
	Driver() dd.Driver
	// ProveHost proves which Docker host the driver reaches.
	ProveHost(ctx context.Context) (dd.HostIdentity, error)
	// Dialled is what the driver was dialled with (empty for the manager's own host).
	Dialled() (endpoint, tlsVersion string)
	// Redial points the host's controllers at a new driver.
	Redial(driver dd.Driver, endpoint, tlsVersion string)
	// Enqueue re-queues a Sandbox bound to the host.
	Enqueue(key types.NamespacedName)
}

// Reconcile observes one DockerHost.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &sandboxv1.DockerHost{}
	if err := r.Get(ctx, req.NamespacedName, h); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	hs, setErr := r.ensureSet(ctx, h)
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
	if setErr != nil {
		setHostCondition(h, sandboxv1.ConditionReady, metav1.ConditionFalse, hostErrorReason(setErr), setErr.Error())
	} else {
		r.observe(ctx, h, hs)
		r.requeueOnTurn(ctx, before, h, hs)
	}
	if m := r.Fleet.Manager(); m != "" {
		h.Status.Manager = m
	}
	schedulable(h)
	h.Status.ObservedGeneration = h.Generation
	if equality.Semantic.DeepEqual(before.Status, h.Status) {
		return ctrl.Result{RequeueAfter: kit.Jitter(hostProbeInterval)}, nil
	}
	if err := r.Status().Update(ctx, h); err != nil && !apierrors.IsConflict(err) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	} else if err != nil {
		return ctrl.Result{RequeueAfter: kit.ConflictRetry}, nil
	}
	return ctrl.Result{RequeueAfter: kit.Jitter(hostProbeInterval)}, nil
}

// finalize keeps the in-use finalizer on a host objects are bound to; a host
// being deleted keeps it, and serves them, until they are gone (done: nothing else
// to do this pass).
func (r *Reconciler) finalize(ctx context.Context, h *sandboxv1.DockerHost, bound int32) (done bool, err error) {
	if h.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(h, sandboxv1.DockerHostFinalizer) {
			return false, nil
		}
		patch := client.MergeFrom(h.DeepCopy())
		controllerutil.AddFinalizer(h, sandboxv1.DockerHostFinalizer)
		return false, r.Patch(ctx, h, patch)
	}
	if bound > 0 {
		return false, nil // served until its Sandboxes and pools go
	}
	patch := client.MergeFrom(h.DeepCopy())
	controllerutil.RemoveFinalizer(h, sandboxv1.DockerHostFinalizer)
	return true, client.IgnoreNotFound(r.Patch(ctx, h, patch))
}

// observe pings the daemon and proves its identity.
func (r *Reconciler) observe(ctx context.Context, h *sandboxv1.DockerHost, hs DrivenHost) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	info, err := hs.Driver().Ping(pctx)
	if err != nil {
		setHostCondition(h, sandboxv1.ConditionReady, metav1.ConditionFalse, hostErrorReason(err), fmt.Sprintf("the daemon does not answer: %v", err))
		return
	}
	h.Status.Daemon = daemonInfo(info)
	id, err := hs.ProveHost(pctx)
	if err != nil {
		setHostCondition(h, sandboxv1.ConditionReady, metav1.ConditionFalse, hostErrorReason(err), fmt.Sprintf("the daemon answers, but its identity is not proven: %v", err))
		return
	}
	h.Status.Identity = kit.HostStatus(id)
	setHostCondition(h, sandboxv1.ConditionReady, metav1.ConditionTrue, sandboxv1.ReasonReachable,
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
		setHostCondition(h, sandboxv1.ConditionSchedulable, metav1.ConditionFalse, sandboxv1.ReasonHostDeleting,
			fmt.Sprintf("being deleted: nothing new is placed; it is kept, and serves what is bound to it (%d), until that is gone", h.Status.Allocated.Sandboxes))
	case h.Spec.Unschedulable:
		setHostCondition(h, sandboxv1.ConditionSchedulable, metav1.ConditionFalse, sandboxv1.ReasonCordoned,
			"cordoned (spec.unschedulable): nothing new is placed; what is bound to it stays and is served")
	default:
		setHostCondition(h, sandboxv1.ConditionSchedulable, metav1.ConditionTrue, sandboxv1.ReasonSchedulable, "placement may use it")
	}
}

func setHostCondition(h *sandboxv1.DockerHost, t string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&h.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
		Message: kit.Cut(msg, kit.NoteLimit), ObservedGeneration: h.Generation})
}

func hostErrorReason(err error) string {
	if errors.Is(err, errInsecure) {
		return sandboxv1.ReasonInsecureEndpoint
	}
	return kit.HostReason(err)
}
