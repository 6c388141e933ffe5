package sandbox

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// holders remembers, per Sandbox service, the container that held the
// service's name when a claim's rename found it taken, so that a later pass
// looks at that one container before it takes another member: a stalled
// service neither takes nor gives back a member on each look. Memory only: a
// manager that restarted meets the name taken once more.
type holders struct {
	mu sync.Mutex
	m  map[types.UID]map[string]string // engine → holder container ID
}

func (h *holders) set(uid types.UID, engine, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[types.UID]map[string]string{}
	}
	if h.m[uid] == nil {
		h.m[uid] = map[string]string{}
	}
	h.m[uid][engine] = id
}

func (h *holders) get(uid types.UID, engine string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[uid][engine]
}

func (h *holders) clear(uid types.UID, engine string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m[uid], engine)
}

// forget drops what is remembered of a Sandbox that is gone.
func (h *holders) forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, uid)
}

// stillHeld is the conflict of a service whose name a container a claim met
// holds still (one inspect), or nil.
func (r *Reconciler) stillHeld(ctx context.Context, w serviceWork) *dd.ConflictError {
	e := w.svc.Engine.Name()
	id := r.holders.get(w.sb.UID, e)
	if id == "" {
		return nil
	}
	c, err := r.Driver.Inspect(ctx, id)
	if err != nil || c.Name != w.svc.Container.Name {
		r.holders.clear(w.sb.UID, e)
		return nil
	}
	return &dd.ConflictError{Name: c.Name, Existing: c}
}

// heldBeforeReserve: a container not of sb holds svc's name (one inspect), so
// a member reserved for it could not be renamed and, its password already in
// the Secret, would go (unreserve). It is remembered as the holder: the
// passes after look at it alone (stillHeld), and none takes a member for it.
func (r *Reconciler) heldBeforeReserve(ctx context.Context, sb *sandboxv1.Sandbox, svc host.Service) bool {
	c, err := r.Driver.Inspect(ctx, svc.Container.Name)
	if err != nil || c.Labels[host.LabelUID] == string(sb.UID) {
		return false // absent, or unknown: the claim finds out
	}
	r.holders.set(sb.UID, svc.Engine.Name(), c.ID)
	return true
}
