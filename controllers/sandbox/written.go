package sandbox

import (
	"context"
	"strconv"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// current replaces sb, read from the cache, by the Sandbox as this manager's
// last write left it when the cache has not caught up with that write yet.
// Otherwise a pass right after a write judges the old status, and its merge
// patch, computed against it, leaves in place the newer fields the server
// holds: a failure written, then the Ready that follows never published
// because the stale read already said Ready. Note: resourceVersions are
// compared as the API server's etcd writes them (increasing integers); any
// other form is never taken for older.
func (m *memory) current(sb *sandboxv1.Sandbox) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.of(sb).written
	if w != nil && w.UID == sb.UID && older(sb.ResourceVersion, w.ResourceVersion) {
		w.DeepCopyInto(sb)
	}
}

// writeStatus writes sb's status as a merge patch from before, and remembers sb
// as the API server returned it.
//
// Note: only what a write returned is remembered, never a pass's Sandbox at
// its end: after a write that failed it holds what the server does not (with
// the resourceVersion of an earlier write that succeeded, its finalizer's), and
// the next pass, handed it for a cache that lagged, patched from it and sent
// none of that (a Sandbox Ready whose status never named its Docker host).
func (r *Reconciler) writeStatus(ctx context.Context, before, sb *sandboxv1.Sandbox) error {
	from := sb.ResourceVersion
	if err := kit.PatchStatus(ctx, r.Client, before, sb); err != nil {
		return err
	}
	r.memory.wrote(from, sb)
	return nil
}

// wrote remembers sb as the API server returned it to a write (its
// resourceVersion is no longer from, the one the write was made from).
func (m *memory) wrote(from string, sb *sandboxv1.Sandbox) {
	if sb.ResourceVersion == from {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(sb).written = sb.DeepCopy()
}

func older(rv, than string) bool {
	a, errA := strconv.ParseUint(rv, 10, 64)
	b, errB := strconv.ParseUint(than, 10, 64)
	return errA == nil && errB == nil && a < b
}
