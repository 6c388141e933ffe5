package host

import (
	"slices"
	"sync"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
)

// Member is a started pool member that answered its probe: what a claim takes.
type Member struct {
	ID, Name string
	// Namespace, Pool and PoolUID are its SandboxPool's.
	Namespace, Pool, PoolUID string
	// Class is its ClassHash.
	Class string
	// Password is the member's own: a new Sandbox's Secret is made with it; a
	// claim for a Sandbox whose Secret exists rotates it away.
	Password string
	// Address is its IP on its network, where the rotation logs in.
	Address string
	// Epoch is the Warm's epoch when it was taken (Take sets it).
	Epoch uint64
}

// Warm is the host's index of claimable members, fed by the pool reconciler and
// taken from by claims. A member once taken is never offered again: after a
// failed claim it is removed, not returned, since it may hold half-rotated
// credentials or another name.
type Warm struct {
	mu    sync.Mutex
	free  map[string][]Member // by pool UID, oldest first
	taken map[string]string   // member ID → pool UID
	// claiming are the members taken and not yet claimed or removed: the
	// claims in flight on the host, which refills wait for.
	claiming map[string]bool
	// epoch counts the Resets: what a pass learned of the host before one
	// (it began before the replica gave the host up) is stale.
	epoch uint64
}

// Epoch is the index's epoch now: a pass reads it before it lists the host,
// and what it offers is dropped if the host was given up meanwhile.
func (w *Warm) Epoch() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch
}

// Current says whether no Reset came since epoch.
func (w *Warm) Current(epoch uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch == epoch
}

// Claiming says whether a claim is in flight on the host, from the Take of its
// member to its end. A refill's start (initdb for postgres) takes the CPU a
// claim needs, so refills wait while one runs (see
// sandboxpool.Reconciler.create).
func (w *Warm) Claiming() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.claiming) > 0
}

// NewWarm is an empty index.
func NewWarm() *Warm {
	return &Warm{free: map[string][]Member{}, taken: map[string]string{}, claiming: map[string]bool{}}
}

// Offer sets the claimable members of one pool, minus those already taken,
// as a pass that began at epoch saw them: nothing when the host was given up
// since. Nothing is started in them ahead of a claim: most claims (a new
// Sandbox's) run no exec at all, and a held exec's teardown at claim cost
// every claim the CPU its Ready write needed (see docs/pools.md).
func (w *Warm) Offer(epoch uint64, poolUID string, ms []Member) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if epoch != w.epoch {
		return
	}
	if !chaosplant.Active(chaosplant.ClaimedOfferedAgain) {
		ms = slices.DeleteFunc(slices.Clone(ms), func(m Member) bool { _, ok := w.taken[m.ID]; return ok })
	}
	if len(ms) == 0 {
		delete(w.free, poolUID)
		return
	}
	w.free[poolUID] = ms
}

// Reset forgets every offer and every member a claim took: the replica gave the host up, and what it knew of the host's
// members is stale once another replica drove it (a member offered here may
// serve a Sandbox now). The pools offer again from what they list.
func (w *Warm) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.free, w.taken, w.claiming = map[string][]Member{}, map[string]string{}, map[string]bool{}
	w.epoch++
}

// release ends member id's claim, if one is in flight: the claim is over, or
// the member goes.
func (w *Warm) release(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.claiming, id)
}

// GiveBack undoes the Take of member id whose claim renamed nothing (the
// service's name was taken) and whose record was undone: its pool's next pass
// offers it again.
func (w *Warm) GiveBack(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.taken, id)
	delete(w.claiming, id)
}

// Take claims a member of class from the pools of namespace (only those named
// in pools, when any): the oldest of the fullest pool, so claims spread. The
// claim is in flight until Host.Claim ends or Host.Remove removes the member.
func (w *Warm) Take(namespace, class string, pools []string) (Member, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	best := ""
	for uid, ms := range w.free {
		m := ms[0]
		if m.Namespace != namespace || m.Class != class || len(pools) > 0 && !slices.Contains(pools, m.Pool) {
			continue
		}
		if best == "" || len(ms) > len(w.free[best]) || len(ms) == len(w.free[best]) && uid < best {
			best = uid
		}
	}
	if best == "" {
		return Member{}, false
	}
	m := w.free[best][0]
	m.Epoch = w.epoch
	w.taken[m.ID] = best
	w.claiming[m.ID] = true
	if w.free[best] = w.free[best][1:]; len(w.free[best]) == 0 {
		delete(w.free, best)
	}
	return m, true
}

// Withdraw takes a member off the offer before it is removed; false when a
// claim took it already (it is the claim's).
func (w *Warm) Withdraw(poolUID, id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.taken[id]; ok {
		return false
	}
	w.free[poolUID] = slices.DeleteFunc(w.free[poolUID], func(m Member) bool { return m.ID == id })
	if len(w.free[poolUID]) == 0 {
		delete(w.free, poolUID)
	}
	return true
}

// Offered is how many of a pool's members are on offer.
func (w *Warm) Offered(poolUID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.free[poolUID])
}

// Taken says whether a claim took the member.
func (w *Warm) Taken(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.taken[id]
	return ok
}

// Forget drops what is known of a pool's members that no longer exist
// (present: the IDs of its members that still do).
func (w *Warm) Forget(poolUID string, present map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, uid := range w.taken {
		if uid == poolUID && !present[id] {
			delete(w.taken, id)
		}
	}
	if len(present) == 0 {
		delete(w.free, poolUID)
	}
}
