package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// record is what the suite knows of one Sandbox it created.
type record struct {
	name, agentID string
	uid           types.UID // empty while a create's outcome is unknown
	engines       []string
	owned         bool // owner policy Container, with an owner container the suite runs
	// deleteAsked is set once the suite asked to delete it (even if the answer was lost).
	deleteAsked bool
	passwords   map[string]string // the Secret's password keys, as first seen
	containers  map[string]string // engine → container ID at the last check
	// rotating is set when the suite deleted its Secret, until new passwords
	// and new containers are seen.
	rotating bool
	// marked is the redis container the data marker was written to.
	marked string
	born   time.Time
}

// workload keeps between minLive and maxLive Sandboxes, creating and deleting them
// at random (seeded) while it runs; the checks pause it.
type workload struct {
	h       *harness
	r       *rand.Rand
	ns      string
	minLive int
	maxLive int
	mongo   bool
	// host is the DockerHost every Sandbox is pinned to; with pools, half the
	// Sandboxes claim from them and half start cold.
	host  string
	pools bool

	ops  sync.Mutex // held for one operation, or by a check for its duration
	mu   sync.Mutex
	live map[string]*record // by name: not asked to be deleted
	gone map[string]*record // asked to be deleted, not yet confirmed gone
	n    int
	// stats
	created, deleted, failedOps int
}

func (w *workload) run(ctx context.Context) {
	w.ops.Lock()
	for len(w.records()) < w.minLive && ctx.Err() == nil {
		w.create(ctx, w.pools && w.r.IntN(2) == 0)
	}
	w.ops.Unlock()
	for ctx.Err() == nil {
		w.ops.Lock()
		if ctx.Err() == nil {
			w.step(ctx)
		}
		w.ops.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(300+w.r.IntN(1500)) * time.Millisecond):
		}
	}
}

func (w *workload) step(ctx context.Context) {
	w.mu.Lock()
	n := len(w.live)
	w.mu.Unlock()
	// Note: the population stays within [minLive, maxLive]; with the two equal
	// (the outage run) it stays put instead of churning.
	grow, shrink := n < w.maxLive, n > w.minLive
	switch {
	case grow && (!shrink || w.r.IntN(2) == 0):
		w.create(ctx, w.pools && w.r.IntN(2) == 0)
	case shrink:
		w.remove(ctx)
	}
}

// deletes returns how many deletes were answered so far.
func (w *workload) deletes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deleted
}

// claims makes n Sandboxes that claim from the pools, now.
func (w *workload) claims(ctx context.Context, n int) {
	for range n {
		w.ops.Lock()
		w.create(ctx, true)
		w.ops.Unlock()
	}
}

// create makes a Sandbox of one or two services; one in four follows an owner
// container. With pools, pooled says whether its services may claim members
// (else it starts cold).
func (w *workload) create(ctx context.Context, pooled bool) {
	w.n++
	rec := &record{name: fmt.Sprintf("sbx-%d", w.n), agentID: fmt.Sprintf("c%s-%d", w.h.id, w.n), born: time.Now()}
	// Note: postgres's initdb is the slow start on a busy machine; half of the
	// Sandboxes have one.
	switch k := w.r.IntN(8); {
	case k == 0 && w.mongo:
		rec.engines = []string{"mongo"}
	case k < 3:
		rec.engines = []string{"postgres", "redis"}
	case k < 5:
		rec.engines = []string{"postgres"}
	default:
		rec.engines = []string{"redis"}
	}
	sb := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: rec.name, Namespace: w.ns},
		Spec: sandboxv1.SandboxSpec{AgentID: rec.agentID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Placement: sandboxv1.Placement{DockerHost: w.host}},
	}
	if !pooled {
		sb.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}
	}
	for _, e := range rec.engines {
		sb.Spec.Services = append(sb.Spec.Services, sandboxv1.ServiceSpec{Engine: sandboxv1.Engine(e)})
	}
	if w.r.IntN(4) == 0 && w.h.startOwner(ctx, rec.agentID) == nil {
		rec.owned = true
		sb.Spec.Owner = nil // the default: policy Container, the owner template
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := w.h.k8s.Create(cctx, sb)
	if err == nil {
		rec.uid = sb.UID
	} else {
		w.failedOps++
	}
	// Note: a create whose answer was lost may have happened: the next check
	// looks it up (resolve).
	w.mu.Lock()
	w.live[rec.name] = rec
	w.created++
	w.mu.Unlock()
}

// remove deletes a random live Sandbox.
func (w *workload) remove(ctx context.Context) {
	w.mu.Lock()
	names := make([]string, 0, len(w.live))
	for n := range w.live {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		w.mu.Unlock()
		return
	}
	rec := w.live[names[w.r.IntN(len(names))]]
	w.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rec.deleteAsked = true
	err := w.h.k8s.Delete(cctx, &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: rec.name, Namespace: w.ns}})
	if err != nil && !apierrors.IsNotFound(err) {
		// Note: it may have been deleted all the same; it stays live until a
		// delete is answered, and its absence is then no fault.
		w.failedOps++
		return
	}
	w.mu.Lock()
	delete(w.live, rec.name)
	w.gone[rec.name] = rec
	w.deleted++
	w.mu.Unlock()
}

// records returns the live records, sorted by name.
// record is the live record of the Sandbox name (nil when none).
func (w *workload) record(name string) *record {
	for _, rec := range w.records() {
		if rec.name == name {
			return rec
		}
	}
	return nil
}

func (w *workload) records() []*record {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*record, 0, len(w.live))
	for _, r := range w.live {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *record) int { return compareNames(a.name, b.name) })
	return out
}

func compareNames(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// sandboxes lists the namespace's Sandboxes by name.
func (w *workload) sandboxes(ctx context.Context) (map[string]*sandboxv1.Sandbox, error) {
	list := &sandboxv1.SandboxList{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.h.k8s.List(cctx, list, client.InNamespace(w.ns)); err != nil {
		return nil, err
	}
	out := map[string]*sandboxv1.Sandbox{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// goneRecords returns the Sandboxes asked to be deleted and not yet seen gone.
func (w *workload) goneRecords() []*record {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*record, 0, len(w.gone))
	for _, r := range w.gone {
		out = append(out, r)
	}
	return out
}

// forget drops a live record whose Sandbox does not exist, and its owner.
func (w *workload) forget(ctx context.Context, rec *record) {
	w.mu.Lock()
	delete(w.live, rec.name)
	w.mu.Unlock()
	w.h.removeOwner(ctx, rec)
}

// forgetGone drops a deleted Sandbox seen gone, and its owner.
func (w *workload) forgetGone(ctx context.Context, rec *record) {
	w.mu.Lock()
	delete(w.gone, rec.name)
	w.mu.Unlock()
	w.h.removeOwner(ctx, rec)
}
