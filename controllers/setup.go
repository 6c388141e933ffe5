package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// instanceTimeout bounds reading the cluster's identity at start-up.
const instanceTimeout = 30 * time.Second

// Setup says how the controllers of one Docker host run.
type Setup struct {
	Options Options
	// MaxConcurrentReconciles bounds the Sandbox workers (0: the default).
	MaxConcurrentReconciles int
	// Sweep runs the orphan sweep.
	Sweep bool
	// HostIdentitySettle is how long a manager that planted the Docker host's
	// identity marker waits before reading it back (0: host.DefaultIdentitySettle).
	HostIdentitySettle time.Duration
	// ObservePass, when set, is told the outcome of every Sandbox pass: tests check
	// how soon the reconciler asks to look again without measuring time.
	ObservePass func(req ctrl.Request, result ctrl.Result, err error)
}

// NewScheme is the scheme the manager serves: client-go's types and Sandboxes.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(sandboxv1.AddToScheme(scheme))
	return scheme
}

// AddToManager registers every controller of the Docker host behind driver with the
// manager: the Sandbox and SandboxPool reconcilers (sharing the host's warm
// members) and, when s.Sweep, the orphan sweep, all on one Docker event stream. It is the one wiring, used by cmd/manager and every suite.
func (s Setup) AddToManager(mgr ctrl.Manager, driver dd.Driver) error {
	if s.Options.Instance == "" {
		ctx, cancel := context.WithTimeout(context.Background(), instanceTimeout)
		defer cancel()
		instance, err := ClusterInstance(ctx, mgr.GetAPIReader())
		if err != nil {
			return err
		}
		s.Options.Instance = instance
		mgr.GetLogger().Info("Instance derived from the cluster's identity", "instance", instance)
	}
	if err := s.Options.Validate(); err != nil {
		return err
	}
	events := newHostEvents(driver)
	settle := s.HostIdentitySettle
	if settle <= 0 {
		settle = host.DefaultIdentitySettle
	}
	identity := host.NewIdentity(driver, settle)
	sandboxes := &SandboxReconciler{Client: mgr.GetClient(), Driver: driver, Options: s.Options,
		MaxConcurrentReconciles: s.MaxConcurrentReconciles, events: events, identity: identity, observe: s.ObservePass}
	if err := sandboxes.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Sandbox controller: %w", err)
	}
	pools := &PoolReconciler{Client: mgr.GetClient(), sandboxes: sandboxes, host: sandboxes.host, keys: sandboxes.poolKeys}
	if err := pools.SetupWithManager(mgr, s.Options.PoolRefills); err != nil {
		return fmt.Errorf("setting up the SandboxPool controller: %w", err)
	}
	sandboxes.pokePool = pools.poke
	if !s.Sweep {
		return nil
	}
	sweep := &SweepReconciler{Driver: driver, Options: s.Options, events: events, identity: identity}
	if err := sweep.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the orphan sweep: %w", err)
	}
	return nil
}

// observed tells observe the outcome of every pass of r (nil: r as it is).
func observed(r reconcile.Reconciler, observe func(ctrl.Request, ctrl.Result, error)) reconcile.Reconciler {
	if observe == nil {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		result, err := r.Reconcile(ctx, req)
		observe(req, result, err)
		return result, err
	})
}
