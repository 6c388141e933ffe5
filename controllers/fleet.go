package controllers

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/dockerhost"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox/statusmetrics"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandboxpool"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sweep"
	"github.com/roboco-sandbox/sandbox-controller/internal/apiclock"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
	"github.com/roboco-sandbox/sandbox-controller/internal/poolkey"
)

// fleet runs one set of controllers per Docker host (hostSet): the Sandbox and
// SandboxPool reconcilers and the orphan sweep of that host, each on its own
// driver, event stream and identity, seeing only the objects bound to it
// (spec.dockerHost). What is one per manager (field indexes, the liveness check,
// the status metrics, the pool keys, placement) is set up here once.
type fleet struct {
	mgr   ctrl.Manager
	setup Setup
	live  *kit.Workers
	keys  *poolkey.Keys
	// clock is the API server's clock, which the Sandboxes' windows are judged on.
	clock *apiclock.Clock

	// leases share the hosts among replicas (nil: this manager drives every host,
	// its controllers on the elected leader only).
	leases *lease.Table

	// taken tells the DockerHost controller of a host this replica took.
	taken chan event.TypedGenericEvent[*sandboxv1.DockerHost]

	mu    sync.Mutex
	hosts map[string]*hostSet
}

// hostSet is what drives one Docker host.
type hostSet struct {
	name string
	// driver is the host's driver as its controllers use it (fenced by its Lease
	// when hosts are shared); raw reads the host from any replica.
	driver, raw dd.Driver
	pools       *sandboxpool.Reconciler
	identity    *host.Identity
	sandboxes   *sandbox.Reconciler
	// endpoint and tlsVersion are what the driver was dialled with (empty for
	// the manager's own host): a change re-dials through sw.
	endpoint, tlsVersion string
	sw                   *dd.Switch
	// removed is set while the host's DockerHost does not exist (Scope.Gone).
	removed *atomic.Bool
}

// AddDialled sets up a DockerHost's controllers on a driver dialled from its spec.
func (f *fleet) AddDialled(name string, driver dd.Driver, endpoint, tlsVersion string) (dockerhost.DrivenHost, error) {
	sw := dd.NewSwitch(driver)
	hs, err := f.add(name, sw)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	hs.endpoint, hs.tlsVersion, hs.sw = endpoint, tlsVersion, sw
	return hs, nil
}

// Redial points the host's controllers at a new driver.
func (hs *hostSet) Redial(driver dd.Driver, endpoint, tlsVersion string) {
	hs.sw.Swap(driver)
	// Note: the new endpoint may reach another daemon: the proof is of the old one.
	hs.identity.Forget()
	hs.endpoint, hs.tlsVersion = endpoint, tlsVersion
}

func newFleet(mgr ctrl.Manager, s Setup) (*fleet, error) {
	f := &fleet{mgr: mgr, setup: s, hosts: map[string]*hostSet{},
		taken: make(chan event.TypedGenericEvent[*sandboxv1.DockerHost], 1024),
		keys:  poolkey.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme())}
	if err := index.Register(mgr, s.Options); err != nil {
		return nil, err
	}
	clock, err := startClock(mgr, s.LocalClock)
	if err != nil {
		return nil, err
	}
	f.clock = clock
	if err := statusmetrics.Register(mgr.GetCache(), mgr.Elected()); err != nil {
		return nil, err
	}
	// Liveness is the manager's own health: every controller's workers take
	// work (the queues of those built with kit.Paced or kit.Watched), however
	// long one pass runs; Docker's health is readiness only.
	if f.live, err = kit.WatchWorkers(mgr, s.WorkersStuckAfter); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("workers", f.live.Check); err != nil {
		return nil, err
	}
	if s.Leases != nil {
		f.leases = lease.NewTable(*s.Leases, mgr.GetClient(), mgr.GetAPIReader())
		f.leases.Hosts = f.hostNames
		f.leases.OnAcquire = func(name string) { f.wake(context.Background(), name) }
		f.leases.OnLose = f.forget
		if err := mgr.Add(f.leases); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// add sets up the controllers of the Docker host name behind driver. A host's
// controllers live as long as the manager: a host removed leaves them idle.
func (f *fleet) add(name string, driver dd.Driver) (*hostSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if hs, ok := f.hosts[name]; ok {
		return hs, nil
	}
	s := f.setup
	settle := s.HostIdentitySettle
	if settle <= 0 {
		settle = host.DefaultIdentitySettle
	}
	raw := driver
	scope := lease.Scope{Name: name, LeaderOnly: f.leases == nil, Removed: new(atomic.Bool)}
	if f.leases != nil {
		scope.Holds = func() bool { return f.leases.Holds(name) }
		driver = lease.Fenced{Driver: raw, Holds: scope.Holds}
	}
	events := eventhub.NewShared(driver)
	identity := host.NewIdentity(driver, settle)
	sandboxes := &sandbox.Reconciler{Client: f.mgr.GetClient(), Driver: driver, Options: s.Options, Scope: scope,
		MaxConcurrentReconciles: s.MaxConcurrentReconciles, Events: events, Identity: identity, Observe: s.ObservePass,
		PoolKeys: f.keys, Clock: f.clock}
	if err := sandboxes.SetupWithManager(f.mgr); err != nil {
		return nil, fmt.Errorf("setting up the Sandbox controller of Docker host %s: %w", name, err)
	}
	pools := &sandboxpool.Reconciler{Client: f.mgr.GetClient(), Class: sandboxes.Class, Identity: identity, Options: s.Options, Host: sandboxes.Host, Keys: f.keys, Scope: scope,
		Observe: s.ObservePoolPass}
	if err := pools.SetupWithManager(f.mgr, s.Options.PoolRefills); err != nil {
		return nil, fmt.Errorf("setting up the SandboxPool controller of Docker host %s: %w", name, err)
	}
	sandboxes.PokePool = pools.Poke
	if s.Sweep {
		sr := &sweep.Reconciler{Driver: driver, Options: s.Options, Events: events, Identity: identity, Scope: scope}
		if err := sr.SetupWithManager(f.mgr); err != nil {
			return nil, fmt.Errorf("setting up the orphan sweep of Docker host %s: %w", name, err)
		}
	}
	hs := &hostSet{name: name, driver: sandboxes.Driver, raw: raw, identity: identity, sandboxes: sandboxes, pools: pools, removed: scope.Removed}
	f.hosts[name] = hs
	return hs, nil
}

// Holds says whether this replica acts on the host name now.
func (f *fleet) Holds(name string) bool { return f.leases == nil || f.leases.Holds(name) }

// Host is the host name's controllers, if this manager drives it yet.
func (f *fleet) Host(name string) (dockerhost.DrivenHost, bool) {
	if hs, ok := f.get(name); ok {
		return hs, true
	}
	return nil, false
}

// Raw is the host name's driver, unfenced, if this manager drives it yet.
func (f *fleet) Raw(name string) (dd.Driver, bool) {
	if hs, ok := f.get(name); ok {
		return hs.raw, true
	}
	return nil, false
}

// Manager names this replica when replicas share the hosts ("": they do not).
func (f *fleet) Manager() string {
	if f.leases == nil {
		return ""
	}
	return f.leases.Config.Identity
}

// Taken tells of each host this replica just took.
func (f *fleet) Taken() <-chan event.TypedGenericEvent[*sandboxv1.DockerHost] { return f.taken }

// Driver is the host's driver as its controllers use it.
func (hs *hostSet) Driver() dd.Driver { return hs.driver }

// ProveHost proves which Docker host the driver reaches.
func (hs *hostSet) ProveHost(ctx context.Context) (dd.HostIdentity, error) {
	return hs.identity.Prove(ctx)
}

// Dialled is what the driver was dialled with (empty for the manager's own host).
func (hs *hostSet) Dialled() (endpoint, tlsVersion string) { return hs.endpoint, hs.tlsVersion }

// Enqueue re-queues a Sandbox bound to the host.
func (hs *hostSet) Enqueue(key types.NamespacedName) { hs.sandboxes.Enqueue(key) }

// get is the host set of name, if this manager drives it.
func (f *fleet) get(name string) (*hostSet, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hs, ok := f.hosts[name]
	return hs, ok
}

// hostNames are the DockerHosts, from the cache.
func (f *fleet) hostNames(ctx context.Context) ([]string, error) {
	var list sandboxv1.DockerHostList
	if err := f.mgr.GetClient().List(ctx, &list); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	sort.Strings(names)
	return names, nil
}
