package sandbox

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/apiclock"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
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

	// Events is the Docker host's event stream, and identity proves which host it
	// is; both shared with the sweep.
	Events   *eventhub.Shared
	Identity *host.Identity
	Host     *host.Host
	Class    *class.Resolver // resolves its services, as its pools' members
	requeue  chan event.TypedGenericEvent[*sandboxv1.Sandbox]
	// own remembers this manager's Docker actions, whose events re-queue nothing.
	own *ownActions
	// recalls keeps each Sandbox's backoff and probe attempts between passes.
	recalls *recalls
	// names are the names this replica's passes took on the host (nameHeld).
	names nameBook
	// holders are the containers a claim found holding a service's name.
	holders holders
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

// ForgetHost drops what the reconciler knows of its host beyond what it lists
// again: the host's Lease was given up, and another replica may drive it
// meanwhile (its members claimed, its containers changed, its Sandboxes'
// backoffs moot).
func (r *Reconciler) ForgetHost() {
	r.recalls.reset()
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
	r.recalls.forget(key)
	r.names.release(key)
	r.secrets.stop(key)
}

// wake re-queues what a finished pull or create waited for: a Sandbox (its
// key's string form) or a pool (host.PoolWaiterPrefix).
func (r *Reconciler) wake(waiter string) {
	pool, isPool := strings.CutPrefix(waiter, host.PoolWaiterPrefix)
	if isPool {
		waiter = pool
	}
	ns, name, err := cache.SplitMetaNamespaceKey(waiter)
	switch {
	case err != nil:
	case isPool:
		r.PokePool(types.NamespacedName{Namespace: ns, Name: name})
	default:
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
