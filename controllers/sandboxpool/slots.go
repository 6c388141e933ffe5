package sandboxpool

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// slotHold is how long a starting member holds a refill slot: its first
// start's burst of CPU. One still starting after it (a loaded host, an image
// slow to boot) waits for its probe deadline without one, so that no pool's
// slow members starve every other pool's refills. A pool's count not renewed
// by a pass within it is dropped: every member it counted has aged out, and a
// pool deleted, moved to another replica or no longer passed holds nothing.
const slotHold = 15 * time.Second

// slots bounds the members starting across pools (--pool-refills): made and
// not yet answering (for their first slotHold), not only being created. A
// member's first start (initdb above all) is most of a refill's CPU, and it
// goes on long after its create returns: bounding creates alone let a burst's
// refills start dozens of engines at once, each too slow to answer within its
// probe deadline.
type slots struct {
	mu       sync.Mutex
	limit    int
	creating int
	starting map[types.UID]starting // by pool, as its last pass saw it
	// waiting are the pools that found fewer slots than they wanted: each is
	// woken (wake) once a slot frees, and waits for nothing else.
	waiting map[types.UID]types.NamespacedName
	wake    func(types.NamespacedName)
}

type starting struct {
	n    int
	seen time.Time
}

// newSlots bounds the members starting at once to limit; wake re-queues a
// pool that waits for a slot.
func newSlots(limit int, wake func(types.NamespacedName)) *slots {
	return &slots{limit: limit, starting: map[types.UID]starting{}, waiting: map[types.UID]types.NamespacedName{}, wake: wake}
}

// take records that pool (key) has n members starting, and reserves up to
// want creates for it: what the limit leaves beside every pool's starting
// members and the creates under way. A pool given fewer than it wants is
// woken once a slot frees.
func (s *slots) take(pool types.UID, key types.NamespacedName, n, want int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	freed := n < s.starting[pool].n
	s.starting[pool] = starting{n: n, seen: now}
	used := s.creating
	for uid, st := range s.starting {
		if now.Sub(st.seen) > slotHold {
			delete(s.starting, uid)
			freed = true
			continue
		}
		used += st.n
	}
	got := min(want, max(0, s.limit-used))
	s.creating += got
	delete(s.waiting, pool)
	if freed && got == want {
		s.wakeLocked()
	}
	if got < want {
		s.waiting[pool] = key
	}
	return got
}

// done ends one create for pool; a member made counts as starting until the
// pool's next pass counts it. One not made frees its slot.
func (s *slots) done(pool types.UID, made bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creating--
	if st, ok := s.starting[pool]; ok && made {
		st.n++
		s.starting[pool] = st
		return
	}
	s.wakeLocked()
}

// forget drops a pool's count (it is deleted, or no longer this replica's).
func (s *slots) forget(pool types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, pool)
	if s.starting[pool].n > 0 {
		s.wakeLocked()
	}
	delete(s.starting, pool)
}

// wakeLocked re-queues every waiting pool: a slot freed (the first to pass
// takes it; the others wait again).
func (s *slots) wakeLocked() {
	for uid, key := range s.waiting {
		delete(s.waiting, uid)
		if s.wake != nil {
			s.wake(key)
		}
	}
}

// startingNow counts the starting members made less than slotHold ago, but
// those seeding (their start is over: their seed waits, or runs in its lane).
func startingNow(cs []dd.ContainerSummary, seeding map[string]bool, now time.Time) int {
	n := 0
	for _, c := range cs {
		if now.Sub(c.CreatedAt) < slotHold && !seeding[c.ID] {
			n++
		}
	}
	return n
}
