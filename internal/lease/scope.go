package lease

import (
	"context"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Scope is what a host's controllers know of their host: its name, whether
// this replica acts on it now, and whether they run on the leader only (one
// manager drives every host) or on every replica (hosts shared by Leases).
type Scope struct {
	Name       string
	Holds      func() bool
	LeaderOnly bool
	// Removed is set while the host's DockerHost does not exist (nil: never).
	Removed *atomic.Bool
}

// Active says whether a pass may act on the host now.
func (s Scope) Active() bool { return !s.Gone() && (s.Holds == nil || s.Holds()) }

// Gone says whether the host's DockerHost was deleted: its controllers act on
// nothing until it is registered again.
func (s Scope) Gone() bool { return s.Removed != nil && s.Removed.Load() }

// Options are a host's controller's options. Every host's controllers share
// their names (sandbox, sandboxpool, sandbox-sweep), so that metrics and
// dashboards add up across the fleet; logs carry the host.
func (s Scope) Options(workers int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: workers, SkipNameValidation: ptr.To(true), NeedLeaderElection: ptr.To(s.LeaderOnly)}
}

// Runnable is a host's background work, run where its controllers run.
func (s Scope) Runnable(fn func(ctx context.Context) error) manager.Runnable {
	return scopedRunnable{fn: fn, leaderOnly: s.LeaderOnly}
}

type scopedRunnable struct {
	fn         func(ctx context.Context) error
	leaderOnly bool
}

func (r scopedRunnable) Start(ctx context.Context) error { return r.fn(ctx) }
func (r scopedRunnable) NeedLeaderElection() bool        { return r.leaderOnly }

// HostLogger names the controller and the DockerHost in every log line of a pass.
func HostLogger(mgr ctrl.Manager, controllerName, host string) func(*reconcile.Request) logr.Logger {
	base := mgr.GetLogger().WithValues("controller", controllerName, "dockerHost", host)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("namespace", req.Namespace, "name", req.Name)
	}
}
