package controllers

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// fleet runs one set of controllers per Docker host (hostSet): the Sandbox and
// SandboxPool reconcilers and the orphan sweep of that host, each on its own
// driver, event stream and identity, seeing only the objects bound to it
// (spec.dockerHost). What is one per manager (field indexes, the liveness check,
// the status metrics, the pool keys, placement) is set up here once.
type fleet struct {
	mgr   ctrl.Manager
	setup Setup
	live  *passes
	keys  *poolKeys

	mu    sync.Mutex
	hosts map[string]*hostSet
}

// hostSet is what drives one Docker host.
type hostSet struct {
	name      string
	driver    dd.Driver
	identity  *host.Identity
	sandboxes *SandboxReconciler
	// endpoint and tlsVersion are what the driver was dialled with (empty for
	// the manager's own host): a change re-dials through sw.
	endpoint, tlsVersion string
	sw                   *switchDriver
}

// addDialled sets up a DockerHost's controllers on a driver dialled from its spec.
func (f *fleet) addDialled(name string, driver dd.Driver, endpoint, tlsVersion string) (*hostSet, error) {
	sw := newSwitchDriver(driver)
	hs, err := f.add(name, sw)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	hs.endpoint, hs.tlsVersion, hs.sw = endpoint, tlsVersion, sw
	return hs, nil
}

// redial points the host's controllers at a new driver.
func (hs *hostSet) redial(driver dd.Driver, endpoint, tlsVersion string) {
	hs.sw.swap(driver)
	hs.endpoint, hs.tlsVersion = endpoint, tlsVersion
}

func newFleet(mgr ctrl.Manager, s Setup) (*fleet, error) {
	f := &fleet{mgr: mgr, setup: s, live: newPasses(), hosts: map[string]*hostSet{},
		keys: newPoolKeys(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme())}
	if err := registerIndexes(mgr, s.Options); err != nil {
		return nil, err
	}
	if err := registerStatusCollector(mgr.GetCache(), mgr.Elected()); err != nil {
		return nil, err
	}
	// Liveness is the manager's own health: no pass stuck (Docker calls have deadlines).
	if err := mgr.AddHealthzCheck("sandbox-passes", f.live.check); err != nil {
		return nil, err
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
	events := newHostEvents(driver)
	identity := host.NewIdentity(driver, settle)
	sandboxes := &SandboxReconciler{Client: f.mgr.GetClient(), Driver: driver, Options: s.Options, hostName: name,
		MaxConcurrentReconciles: s.MaxConcurrentReconciles, events: events, identity: identity, observe: s.ObservePass,
		poolKeys: f.keys, live: f.live}
	if err := sandboxes.SetupWithManager(f.mgr); err != nil {
		return nil, fmt.Errorf("setting up the Sandbox controller of Docker host %s: %w", name, err)
	}
	pools := &PoolReconciler{Client: f.mgr.GetClient(), sandboxes: sandboxes, host: sandboxes.host, keys: f.keys, hostName: name}
	if err := pools.SetupWithManager(f.mgr, s.Options.PoolRefills); err != nil {
		return nil, fmt.Errorf("setting up the SandboxPool controller of Docker host %s: %w", name, err)
	}
	sandboxes.pokePool = pools.poke
	if s.Sweep {
		sweep := &SweepReconciler{Driver: driver, Options: s.Options, events: events, identity: identity, hostName: name}
		if err := sweep.SetupWithManager(f.mgr); err != nil {
			return nil, fmt.Errorf("setting up the orphan sweep of Docker host %s: %w", name, err)
		}
	}
	hs := &hostSet{name: name, driver: sandboxes.Driver, identity: identity, sandboxes: sandboxes}
	f.hosts[name] = hs
	return hs, nil
}

// get is the host set of name, if this manager drives it.
func (f *fleet) get(name string) (*hostSet, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hs, ok := f.hosts[name]
	return hs, ok
}

// all are the host sets, by name.
func (f *fleet) all() []*hostSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*hostSet, 0, len(f.hosts))
	for _, hs := range f.hosts {
		out = append(out, hs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// boundTo lists, from the cache, the Sandboxes bound to the Docker host name.
func boundTo(ctx context.Context, reader client.Reader, name string) ([]types.NamespacedName, error) {
	var list sandboxv1.SandboxList
	if err := reader.List(ctx, &list, client.MatchingFields{dockerHostIndex: name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	keys := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		keys = append(keys, types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
	return keys, nil
}
