package host

import (
	"strings"
	"sync"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// Seeds take a lane of the host's gate (internal/lanes) before they start:
// at most --seed-lanes at once on the host, --seed-lanes-per-namespace per
// namespace, namespaces in turn. Data operations and rotations take none, so
// they never queue behind a seed.

// SeedLanes are the gate's caps (see options.SeedLaneCaps).
type SeedLanes struct{ PerHost, PerNamespace int }

// LaneWait is how often the first seed in its namespace's queue looks again,
// as a backstop to the gate's wake; one further back looks again later
// (LaneWaitPoll), up to maxLaneWait, well within lanes.DefaultForgetAfter,
// past which a waiter that stopped asking loses its place.
const LaneWait = 10 * time.Second

// maxLaneWait bounds a waiting seed's backstop look: its place in the queue,
// in its status, is at most this old.
const maxLaneWait = 45 * time.Second

// LaneWaitPoll is when a seed position-th in its namespace's queue looks
// again. A lane is granted by a wake, never by a look, so a look only
// refreshes the place the status shows and the gate's memory of the waiter:
// 28 seeds waiting behind 5-minute ones, each looking every 10 s, cost the
// host's other Sandboxes 2.8 passes a second (TestBenchSeedsRunning).
func LaneWaitPoll(position int) time.Duration {
	return min(time.Duration(max(position, 1))*LaneWait, maxLaneWait)
}

// Lane is one seed's place at the gate: owner's step key.
type Lane struct {
	gate  *lanes.Gate
	owner lanes.Owner
	key   string
}

// SeedLane is the lane of the seed key (one per service or member) of the
// object kind/namespace/name (uid tells a recreated object from the one
// deleted under its name).
func (h *Host) SeedLane(kind, namespace, name, uid, key string) Lane {
	return Lane{gate: h.lanes, owner: laneOwner(kind, namespace, name, uid), key: key}
}

// ReleaseSeedLanes gives back every lane of the object (it is deleted).
func (h *Host) ReleaseSeedLanes(kind, namespace, name, uid string) {
	h.lanes.ReleaseOwner(laneOwner(kind, namespace, name, uid))
}

// ReleaseSeedLane gives back one lane (its service was dropped, its member
// removed).
func (h *Host) ReleaseSeedLane(l Lane) { l.release() }

func laneOwner(kind, namespace, name, uid string) lanes.Owner {
	return lanes.Owner{Namespace: namespace, Name: kind + "/" + name, UID: uid}
}

func (l Lane) acquire() lanes.Ticket {
	if l.gate == nil {
		return lanes.Ticket{Granted: true}
	}
	return l.gate.Acquire(l.owner, l.key, 1)
}

func (l Lane) hold() {
	if l.gate != nil {
		l.gate.Hold(l.owner, l.key, 1)
	}
}

func (l Lane) release() {
	if l.gate != nil {
		l.gate.Release(l.owner, l.key)
	}
}

// laneWakers route a granted lane to its object's controller, by kind.
type laneWakers struct {
	mu sync.Mutex
	by map[string]func(namespace, name string)
}

// OnLaneGranted calls wake with the object of kind whose waiting seed got its
// lane. wake must not block (a non-blocking send; LaneWait is the backstop).
func (h *Host) OnLaneGranted(kind string, wake func(namespace, name string)) {
	h.wakers.mu.Lock()
	defer h.wakers.mu.Unlock()
	if h.wakers.by == nil {
		h.wakers.by = map[string]func(string, string){}
	}
	h.wakers.by[kind] = wake
}

func (w *laneWakers) wake(o lanes.Owner) {
	kind, name, _ := strings.Cut(o.Name, "/")
	w.mu.Lock()
	fn := w.by[kind]
	w.mu.Unlock()
	if fn != nil {
		fn(o.Namespace, name)
	}
}

func newGate(s SeedLanes, w *laneWakers) *lanes.Gate {
	return lanes.New(s.PerHost, s.PerNamespace, lanes.WithWake(w.wake))
}
