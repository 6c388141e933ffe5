package kit

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MaxErrorBackoff caps how long an object waits after a pass that returned an
// error (an API write refused, the API server down). controller-runtime's
// default grows to 1000s: a ten-second API outage makes a reconcile fail a
// dozen times in a row, and a replica that kept running through it (one that
// was not the leader) then left its Sandboxes unserved for minutes after the
// API server was back. Failures a retry may fix at the Docker side are paced
// by RetryBackoff instead (a requeue, not an error).
const MaxErrorBackoff = 30 * time.Second

// RateLimiter is controller-runtime's default with the per-object backoff
// capped at MaxErrorBackoff: 5ms after the first error, doubling, and the
// overall 10 per second (burst 100) of the default.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxErrorBackoff),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Paced is o with RateLimiter and its queue Watched: every controller of the
// manager but the sweep (which paces itself by its interval) and the strays'
// builds its options through it.
func Paced(mgr manager.Manager, o controller.Options) controller.Options {
	o.RateLimiter = RateLimiter()
	return Watched(mgr, o)
}
