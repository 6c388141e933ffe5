package kit

import (
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// queue is a controller's work queue, watched as its workers use it: how many
// wait in Get, when one last took an item, and which items are in a pass.
type queue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	name string
	now  func() time.Time

	mu sync.Mutex
	// started is set by the first Get: a controller whose workers have not
	// started (caches syncing, a replica not elected) is not judged.
	started, stopped bool
	idle             int // workers waiting in Get
	lastTaken        time.Time
	passes           map[reconcile.Request]*pass
}

// Note: a priority queue still, so that the controller and its sources keep
// its priorities (e.g. the initial list's items after the changes).
var _ priorityqueue.PriorityQueue[reconcile.Request] = (*queue)(nil)

// pass is an item a worker took and has not done.
type pass struct {
	since time.Time
	// requeued: added again meanwhile. Note: controller-runtime's queue counts
	// such an item in Len although no worker may take it before Done.
	requeued bool
}

func (q *queue) GetWithPriority() (reconcile.Request, int, bool) {
	q.mu.Lock()
	if !q.started {
		q.started, q.lastTaken = true, q.now()
	}
	q.idle++
	q.mu.Unlock()
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.idle--
	if !shutdown {
		q.lastTaken = q.now()
		q.passes[item] = &pass{since: q.lastTaken}
	}
	return item, priority, shutdown
}

func (q *queue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

func (q *queue) Done(item reconcile.Request) {
	q.mu.Lock()
	delete(q.passes, item)
	q.mu.Unlock()
	q.PriorityQueue.Done(item)
}

func (q *queue) Add(item reconcile.Request) {
	q.requeued(item)
	q.PriorityQueue.Add(item)
}

func (q *queue) AddAfter(item reconcile.Request, d time.Duration) {
	q.requeued(item)
	q.PriorityQueue.AddAfter(item, d)
}

func (q *queue) AddRateLimited(item reconcile.Request) {
	q.requeued(item)
	q.PriorityQueue.AddRateLimited(item)
}

func (q *queue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	q.requeued(items...)
	q.PriorityQueue.AddWithOpts(o, items...)
}

func (q *queue) ShutDown() {
	q.stop()
	q.PriorityQueue.ShutDown()
}

func (q *queue) ShutDownWithDrain() {
	q.stop()
	q.PriorityQueue.ShutDownWithDrain()
}

func (q *queue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
}

// requeued notes the items in a pass that are added again.
func (q *queue) requeued(items ...reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, item := range items {
		if p, ok := q.passes[item]; ok {
			p.requeued = true
		}
	}
}

// stuck says why the controller's workers take no work: items wait, no
// worker waits for one, and none took one for longer than after.
func (q *queue) stuck(now time.Time, after time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.started || q.stopped || q.idle > 0 {
		return nil
	}
	// Note: an item requeued while in a pass may still wait for its delay, so
	// this counts at least the items a free worker would take, maybe fewer.
	waiting := q.Len()
	for _, p := range q.passes {
		if p.requeued {
			waiting--
		}
	}
	idle := now.Sub(q.lastTaken)
	if waiting <= 0 || idle <= after {
		return nil
	}
	return fmt.Errorf("controller %s: %d waiting, no worker took one for %s (more than %s)%s",
		q.name, waiting, roundFor(idle), after, q.longest(now))
}

// longest names the longest pass running, the likeliest culprit.
func (q *queue) longest(now time.Time) string {
	var key reconcile.Request
	var since time.Time
	for k, p := range q.passes {
		if since.IsZero() || p.since.Before(since) {
			key, since = k, p.since
		}
	}
	if since.IsZero() {
		return ""
	}
	return fmt.Sprintf("; %d workers in passes, the longest (%s) for %s", len(q.passes), key, roundFor(now.Sub(since)))
}

// roundFor is d as a person reads it: tenths of a second under a minute.
func roundFor(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
