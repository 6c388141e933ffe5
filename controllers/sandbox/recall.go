package sandbox

import (
	"math"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// recalls is what the reconciler keeps of each Sandbox between passes, in memory
// only: how many passes in a row failed (the backoff's step), how its probes
// went, the removals Docker refused, and the Sandbox as its last write left it. A restarted manager starts afresh: the first retry comes at once, and a
// probe's deadline counts from its first attempt after the restart.
type recalls struct {
	mu        sync.Mutex
	sandboxes map[types.NamespacedName]*recall
}

// recall is the memory of one Sandbox (of one UID: a Sandbox made again under the
// same name starts afresh).
type recall struct {
	uid      types.UID
	failures int
	// probes are the looks at each service's current container, by engine.
	probes map[string]*probeAttempts
	// aside are the failed removals of containers Docker could not remove, by ID.
	aside map[string]*asideRetry
	// creates are the services' failed creates, by engine.
	creates map[string]createRetry
	// secretTried: a pass tried to make its Secret (see neverMade).
	secretTried bool
	// written is the Sandbox as the last pass that wrote it left it.
	written *sandboxv1.Sandbox
	// listed is when each container last listed its checkpoints, and
	// listings the request of the listing under way, by ID.
	listed   map[string]time.Time
	listings map[string]string
}

func newRecalls() *recalls { return &recalls{sandboxes: map[types.NamespacedName]*recall{}} }

// of returns sb's memory. Callers hold m.mu.
func (m *recalls) of(sb *sandboxv1.Sandbox) *recall {
	key := types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name}
	rec, ok := m.sandboxes[key]
	if !ok || rec.uid != sb.UID {
		rec = &recall{uid: sb.UID, probes: map[string]*probeAttempts{}, aside: map[string]*asideRetry{}, creates: map[string]createRetry{},
			listed: map[string]time.Time{}, listings: map[string]string{}}
		m.sandboxes[key] = rec
	}
	return rec
}

// forget drops the memory of a Sandbox that is gone.
func (m *recalls) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sandboxes, key)
}

// reset drops the memory of every Sandbox: the host was given up.
func (m *recalls) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.sandboxes)
}

// secretTried notes that a pass tries to make sb's Secret.
func (m *recalls) secretTried(sb *sandboxv1.Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(sb).secretTried = true
}

func (m *recalls) triedSecret(sb *sandboxv1.Sandbox) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.of(sb).secretTried
}

// probeBackoff paces the looks at a container that is not ready yet (not running,
// no address, or its probe failed): 50ms after the first, ×1.2 after each, at most
// probeInterval. A service is thus noticed at most 50ms plus a fifth of the time
// already waited after it answers (a fixed 1s noticed it up to a second late), at
// the cost of about 17 looks before the 1s pace instead of 5: at most ~75 probes
// in a service's first minute, 60 in each after. Note: a pass probes every service
// not ready yet, so the quickest pace of a Sandbox's services drives them all;
// each probe counts as a look on its own container, so all of them slow down.
var probeBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 1.2, Cap: probeInterval, Steps: math.MaxInt32}

// probeInterval is the slowest pace of probes until the engine's deadline (probeBackoff).
const probeInterval = time.Second

// minProbeAttempts is how many failed probes, spanning the engine's deadline, it
// takes to judge that a service did not answer in time: a pass delayed in the
// queue past the deadline has probed once, late, and that is no timeout.
const minProbeAttempts = 3

// probeAttempts are the looks at one container before it answered.
type probeAttempts struct {
	containerID string
	// looks counts every one (they pace the next); failed counts the failed
	// probes among them and first is when the first failed (they judge the
	// deadline).
	looks, failed int
	first         time.Time
}

// look records a look at containerID that found it not ready; a new container
// starts afresh. Callers hold m.mu.
func (m *recalls) look(sb *sandboxv1.Sandbox, engineName, containerID string) *probeAttempts {
	rec := m.of(sb)
	a := rec.probes[engineName]
	if a == nil || a.containerID != containerID {
		a = &probeAttempts{containerID: containerID}
		rec.probes[engineName] = a
	}
	a.looks++
	return a
}

// notRunning records a look at a container that does not run yet or has no
// address, and returns when to look again.
func (m *recalls) notRunning(sb *sandboxv1.Sandbox, engineName, containerID string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return host.Delay(probeBackoff, m.look(sb, engineName, containerID).looks-1)
}

// probeFailed records a failed probe of containerID and reports whether the
// service's attempts now span its deadline, since when it has been probed, and
// when to probe again (before the deadline).
func (m *recalls) probeFailed(sb *sandboxv1.Sandbox, engineName, containerID string, deadline time.Duration) (timedOut bool, since time.Time, next time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.look(sb, engineName, containerID)
	if a.failed == 0 {
		a.first = time.Now()
	}
	a.failed++
	return a.failed >= minProbeAttempts && time.Since(a.first) >= deadline, a.first, host.Delay(probeBackoff, a.looks-1)
}

// A container Docker cannot remove (dead, its root filesystem still mounted after a
// daemon restart during its exit) is retried on its own backoff, never the
// Sandbox's: it must not hold the service back, nor make its other retries wait.

// asideRetry is the memory of a container Docker would not remove: how many
// removals failed, and when the next one is due.
type asideRetry struct {
	failures int
	due      time.Time
}

// asideDue is how long until the next removal of container id is due (0: now).
func (m *recalls) asideDue(sb *sandboxv1.Sandbox, id string, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.of(sb).aside[id]; ok && a.due.After(now) {
		return a.due.Sub(now)
	}
	return 0
}

// asideFailed records a failed removal of container id and returns when the next
// is due: retryBackoff, counted per container.
func (m *recalls) asideFailed(sb *sandboxv1.Sandbox, id string, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.of(sb)
	a := rec.aside[id]
	if a == nil {
		a = &asideRetry{}
		rec.aside[id] = a
	}
	wait := kit.Jitter(host.Delay(kit.RetryBackoff, a.failures))
	a.failures++
	a.due = now.Add(wait)
	return wait
}

// asideGone forgets a container that is removed.
func (m *recalls) asideGone(sb *sandboxv1.Sandbox, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.of(sb).aside, id)
}

// current replaces sb, read from the cache, by the Sandbox as this manager's
// last write left it when the cache has not caught up with that write yet.
// Otherwise a pass right after a write judges the old status, and its merge
// patch, computed against it, leaves in place the newer fields the server
// holds: a failure written, then the Ready that follows never published
// because the stale read already said Ready. Note: resourceVersions are
// compared as the API server's etcd writes them (increasing integers); any
// other form is never taken for older.
func (m *recalls) current(sb *sandboxv1.Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.of(sb).written
	if w != nil && w.UID == sb.UID && older(sb.ResourceVersion, w.ResourceVersion) {
		w.DeepCopyInto(sb)
	}
}

// wrote remembers sb as the API server returned it to a write (its
// resourceVersion is no longer from, the one the write was made from).
func (m *recalls) wrote(from string, sb *sandboxv1.Sandbox) {
	if sb.ResourceVersion == from {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(sb).written = sb.DeepCopy()
}

// saw remembers sb, read from the API server, when it is newer than the last
// write: a pass that lost a race to another writer starts the next from it,
// whatever the cache says.
func (m *recalls) saw(sb *sandboxv1.Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.of(sb)
	if rec.written == nil || older(rec.written.ResourceVersion, sb.ResourceVersion) {
		rec.written = sb.DeepCopy()
	}
}

func older(rv, than string) bool {
	a, errA := strconv.ParseUint(rv, 10, 64)
	b, errB := strconv.ParseUint(than, 10, 64)
	return errA == nil && errB == nil && a < b
}

// nameBook holds the names passes of this replica took, by Sandbox.
type nameBook struct {
	mu sync.Mutex
	by map[string]types.NamespacedName
}

// take gives names to key unless another Sandbox holds one; it returns that one.
func (b *nameBook) take(key types.NamespacedName, ns []string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]types.NamespacedName{}
	}
	for _, n := range ns {
		if holder, ok := b.by[n]; ok && holder != key {
			return n, false
		}
	}
	for _, n := range ns {
		b.by[n] = key
	}
	return "", true
}

// release gives back every name key holds: its Sandbox is gone.
func (b *nameBook) release(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for n, holder := range b.by {
		if holder == key {
			delete(b.by, n)
		}
	}
}

// reset forgets the book: the host was given up.
func (b *nameBook) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.by)
}
