package controllers

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/dockerhost"
	"github.com/roboco-sandbox/sandbox-controller/controllers/placement"
	"github.com/roboco-sandbox/sandbox-controller/controllers/quota"
	"github.com/roboco-sandbox/sandbox-controller/internal/apiclock"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// instanceTimeout bounds reading the cluster's identity at start-up.
const instanceTimeout = 30 * time.Second

// Setup says how the controllers of one Docker host run.
type Setup struct {
	Options options.Options
	// MaxConcurrentReconciles bounds the Sandbox workers (0: the default).
	MaxConcurrentReconciles int
	// PlacementWorkers bounds the Sandboxes placed at once (0: 1).
	PlacementWorkers int
	// Sweep runs the orphan sweep.
	Sweep bool
	// WorkersStuckAfter is how long a controller's workers may take no item while
	// items wait before /healthz fails (0: kit.DefaultStuckAfter); tests shorten it.
	WorkersStuckAfter time.Duration
	// HostIdentitySettle is how long a manager that planted the Docker host's
	// identity marker waits before reading it back (0: host.DefaultIdentitySettle).
	HostIdentitySettle time.Duration
	// DockerHostName names the DockerHost of the driver given to AddToManager
	// (default DefaultDockerHostName); DockerEndpoint is its address, recorded in
	// the DockerHost the manager creates for it when there is none.
	DockerHostName, DockerEndpoint string
	// Leases, when set, share the Docker hosts among manager replicas, one Lease
	// per DockerHost; unset, the elected leader drives every host.
	Leases *lease.Config
	// UserAgent is what the manager calls itself to the DockerHosts it dials (the
	// daemons' logs then say which replica asked).
	UserAgent string
	// Dial, when set, makes the driver of a registered DockerHost instead of
	// connecting to its endpoint (tests give fake hosts).
	Dial func(ctx context.Context, h *sandboxv1.DockerHost) (dd.Driver, error)
	// LocalClock, when set, is this process's clock (tests run it ahead of the
	// API server's); ttl and owner windows are judged on the API server's clock,
	// measured against it (internal/apiclock).
	LocalClock func() time.Time
	// ObservePass, when set, is told the outcome of every Sandbox pass: tests check
	// how soon the reconciler asks to look again without measuring time.
	ObservePass func(req ctrl.Request, result ctrl.Result, err error)
	// ObservePoolPass is ObservePass for the SandboxPool passes.
	ObservePoolPass func(req ctrl.Request, result ctrl.Result, err error)
}

// NewScheme is the scheme the manager serves: client-go's types and Sandboxes.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(sandboxv1.AddToScheme(scheme))
	return scheme
}

// AddToManager registers every controller with the manager: placement, the
// SandboxQuota controller, the strays' (strays.go), the DockerHost controller, and the controllers of each Docker host (fleet). A
// non-nil driver is the manager's own Docker host, the implicit DockerHost
// (Setup.DockerHostName); the others are dialled from their DockerHost objects.
// It is the one wiring, used by cmd/manager and every suite.
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
	f, err := newFleet(mgr, s)
	if err != nil {
		return err
	}
	implicit := ""
	if driver != nil {
		implicit = cmp.Or(s.DockerHostName, DefaultDockerHostName)
		if _, err := f.add(implicit, driver); err != nil {
			return err
		}
		if err := mgr.Add(implicitHost{client: mgr.GetClient(), name: implicit, endpoint: s.DockerEndpoint}); err != nil {
			return err
		}
	}
	pl := &placement.Reconciler{Client: mgr.GetClient(), API: mgr.GetAPIReader(), Drivers: f, Options: s.Options, Workers: s.PlacementWorkers}
	if err := pl.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up placement: %w", err)
	}
	if err := (placement.PoolReconciler{Reconciler: pl}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up pool placement: %w", err)
	}
	if err := (&quota.Reconciler{Client: mgr.GetClient(), API: mgr.GetAPIReader(), Options: s.Options}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the SandboxQuota controller: %w", err)
	}
	if err := newStrays(mgr, f).setupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the strays controllers: %w", err)
	}
	hosts := &dockerhost.Reconciler{Client: mgr.GetClient(), API: mgr.GetAPIReader(), Fleet: f, Options: s.Options, UserAgent: s.UserAgent,
		Implicit: implicit, Dial: s.Dial}
	if err := hosts.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the DockerHost controller: %w", err)
	}
	return nil
}

// clockTimeout bounds the first measurement of the API server's clock.
const clockTimeout = 10 * time.Second

// startClock measures the API server's clock before any controller runs, then
// again every apiclock.MeasureEvery on every replica; a failed first measurement
// leaves the skew at zero until a later one succeeds.
func startClock(mgr ctrl.Manager, local func() time.Time) (*apiclock.Clock, error) {
	c := apiclock.New(local)
	ctx, cancel := context.WithTimeout(context.Background(), clockTimeout)
	defer cancel()
	if err := c.Measure(ctx, mgr.GetConfig()); err != nil {
		mgr.GetLogger().Error(err, "Measuring the skew against the API server's clock; taking none until it can be")
	} else if skew := c.Skew(); skew > time.Second || skew < -time.Second {
		mgr.GetLogger().Info("This process's clock differs from the API server's; ttl and owner windows are judged on the API server's", "skew", skew.String())
	}
	return c, mgr.Add(everyReplica(c.Run(mgr.GetConfig())))
}

// everyReplica runs fn on every replica, leader or not.
type everyReplica func(ctx context.Context) error

func (r everyReplica) Start(ctx context.Context) error { return r(ctx) }
func (r everyReplica) NeedLeaderElection() bool        { return false }
