package sandbox

import (
	"context"
	"strconv"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox/data"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// relist has a ready service that holds checkpoints, and no request to do,
// list them again once every Options.Relist, as a step beside the pass: so
// status.checkpoints never names for long one its container no longer holds
// (the agent is a superuser there, and may drop one). A new request
// supersedes a listing still running.
func (r *Reconciler) relist(ctx context.Context, w serviceWork, res serviceResult) serviceResult {
	d, container := res.status.Data, res.status.ContainerID
	if d == nil || !res.status.Ready || len(d.Checkpoints) == 0 && !r.unlisted(w.sb, d, container) {
		return res
	}
	every := r.Options.Relist()
	if wait := r.recalls.listDue(w.sb, container, every); wait > 0 {
		res.after(wait)
		return res
	}
	// Note: a key of its own per listing (a step runs once per key), kept
	// until it ends: a new key would supersede a listing still running. No
	// inspect: a listing reads the engine over its local socket or loopback,
	// not at the container's address.
	call := engine.DataCall{Op: engine.OpList, Request: r.recalls.listing(w.sb, container)}
	run, err := r.Host.Data(ctx, w.svc, dd.Container{ID: container}, "127.0.0.1", call)
	switch {
	case err != nil:
		return res.dockerFailed(ctx, err, "listing the checkpoints of "+w.svc.Container.Name)
	case run.Running:
		res.after(run.Poll)
		return res
	}
	r.recalls.listedAt(w.sb, container)
	if run.Listed {
		r.checkpointsLost(w, &res, data.Listed(d, run.Checkpoints, container, ""), "its container no longer holds them")
	}
	res.after(every)
	return res
}

// unlisted says whether d's container took a checkpoint this manager has
// not seen listed: one a release before named checkpoints took (its status
// lists none), or one whose listing a restarted manager has not seen.
func (r *Reconciler) unlisted(sb *sandboxv1.Sandbox, d *sandboxv1.ServiceData, container string) bool {
	if d.LastCheckpoint == nil || d.LastCheckpoint.ContainerID != container {
		return false
	}
	r.recalls.mu.Lock()
	defer r.recalls.mu.Unlock()
	_, seen := r.recalls.of(sb).listed[container]
	return !seen
}

// listDue says how long until container's checkpoints are to be listed
// again (0: now): every after the last listing this manager saw, and at
// once after a restart.
func (m *recalls) listDue(sb *sandboxv1.Sandbox, container string, every time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.of(sb).listed[container]
	if !ok {
		return 0
	}
	return max(0, every-time.Since(last))
}

// listedAt records that container listed its checkpoints now, and forgets
// the containers sb no longer runs.
func (m *recalls) listedAt(sb *sandboxv1.Sandbox, container string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	listed := m.of(sb).listed
	keep := map[string]bool{}
	for _, s := range sb.Status.Services {
		keep[s.ContainerID] = true
	}
	for id := range listed {
		if !keep[id] {
			delete(listed, id)
		}
	}
	listed[container] = time.Now()
	delete(m.of(sb).listings, container)
}

// listing is the request of container's listing: the one under way, else a
// new one.
func (m *recalls) listing(sb *sandboxv1.Sandbox, container string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.of(sb)
	if id, ok := rec.listings[container]; ok {
		return id
	}
	id := "list-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	rec.listings[container] = id
	return id
}
