package kit

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultStuckAfter is how long a controller's workers may take no item while
// items wait before the manager counts as stuck. Long steps run beside the
// pass, so a pass is short; against a Docker daemon that never answers, every
// call ends at its deadline (30s; a create 60s) and the pass with it, so the
// workers keep taking items through an outage and it never fails liveness.
// Note: not a flag: the liveness probe's periodSeconds and failureThreshold
// are the operator's knobs for how soon a stuck manager is restarted; this
// only says what stuck is, and a few minutes is far past any pass.
const DefaultStuckAfter = 3 * time.Minute

// Workers watches the work queues of a manager's controllers, for /healthz:
// the manager is live while every controller's workers take work, however
// long one pass runs.
type Workers struct {
	stuckAfter time.Duration
	now        func() time.Time // the clock; a test's own in tests
	log        logr.Logger
	mu         sync.Mutex
	queues     []*queue
}

// watching is the Workers of each manager, found by the manager its
// controllers are built with (Watched): controller-runtime has no manager-wide
// queue option, and every controller's setup has the manager at hand.
var watching sync.Map // manager.Manager → *Workers

// WatchWorkers watches the queues of mgr's controllers built from now on
// through Watched or Paced, until mgr stops; stuckAfter 0 is DefaultStuckAfter.
func WatchWorkers(mgr manager.Manager, stuckAfter time.Duration) (*Workers, error) {
	if stuckAfter <= 0 {
		stuckAfter = DefaultStuckAfter
	}
	w := newWorkers(stuckAfter, mgr.GetLogger().WithName("liveness"))
	watching.Store(mgr, w)
	forget := everyReplica(func(ctx context.Context) error {
		<-ctx.Done()
		watching.Delete(mgr)
		return nil
	})
	if err := mgr.Add(forget); err != nil {
		watching.Delete(mgr)
		return nil, err
	}
	return w, nil
}

func newWorkers(stuckAfter time.Duration, log logr.Logger) *Workers {
	return &Workers{stuckAfter: stuckAfter, now: time.Now, log: log}
}

// Watched is o with a work queue mgr's Workers watch: controller-runtime's
// default (its priority queue), which the Workers see items added to, taken
// (Get) and done. o is returned as it is when no Workers watch mgr.
func Watched(mgr manager.Manager, o controller.Options) controller.Options {
	v, ok := watching.Load(mgr)
	if !ok {
		return o
	}
	w := v.(*Workers)
	log := mgr.GetLogger()
	o.NewQueue = func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		inner := priorityqueue.New(name, func(po *priorityqueue.Opts[reconcile.Request]) {
			po.Log = log.WithValues("controller", name)
			po.RateLimiter = rl
		})
		return w.watch(name, inner)
	}
	return o
}

func (w *Workers) watch(name string, inner priorityqueue.PriorityQueue[reconcile.Request]) *queue {
	q := &queue{PriorityQueue: inner, name: name, now: w.now, passes: map[reconcile.Request]*pass{}}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queues = append(w.queues, q)
	return q
}

// Check is the /healthz check: it fails while a controller has items waiting
// and none of its workers took one for longer than stuckAfter.
func (w *Workers) Check(*http.Request) error {
	w.mu.Lock()
	queues := append([]*queue(nil), w.queues...)
	w.mu.Unlock()
	now := w.now()
	var errs []error
	for _, q := range queues {
		if err := q.stuck(now, w.stuckAfter); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		// Note: the probe's answer withholds the reason; the log keeps it.
		w.log.Info("Liveness fails: a controller's workers take no work", "reason", err.Error())
	}
	return err
}

// everyReplica runs fn on every replica, leader or not.
type everyReplica func(ctx context.Context) error

func (r everyReplica) Start(ctx context.Context) error { return r(ctx) }
func (r everyReplica) NeedLeaderElection() bool        { return false }
