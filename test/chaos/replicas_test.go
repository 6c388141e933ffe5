package chaos

import (
	"context"
	"fmt"
	"time"
)

// A run's managers are replicas (--leader-elect) that share the two DockerHosts
// through host Leases, each driving its fair share: one host each.

// holder is the index of the replica driving DockerHost name (its
// status.manager), or -1.
func (r *run) holder(ctx context.Context, name string) int {
	dh, err := r.h.dockerHost(ctx, name)
	if err != nil || dh.Status.Manager == "" {
		return -1
	}
	for i, m := range r.mgrs {
		if m.identity() == dh.Status.Manager {
			return i
		}
	}
	return -1
}

// waitHolder waits until replica i drives DockerHost name.
func (r *run) waitHolder(ctx context.Context, name string, i int) error {
	for deadline := time.Now().Add(r.s.bound); r.holder(ctx, name) != i; {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("replica %d did not take DockerHost %s within %s", i, name, r.s.bound)
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return nil
}

// mainHolder waits until some replica drives the main host and returns it.
func (r *run) mainHolder(ctx context.Context) (int, error) {
	for deadline := time.Now().Add(r.s.bound); ; {
		if i := r.holder(ctx, r.h.mainHost()); i >= 0 {
			return i, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return -1, fmt.Errorf("no replica drives DockerHost %s after %s", r.h.mainHost(), r.s.bound)
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// handLease hands the main host's Lease to the other replica and back to the
// first while claims run, as a rollout of the other replica does, without the
// first one restarting (so what it knew of the host before it gave the host up
// is stale when it drives the host again):
//  1. the other replica leaves: the first drives both hosts;
//  2. it comes back: the first gives main up to it (main sorts last);
//  3. claims run there, taking members the first one saw;
//  4. more claims are asked for, and the other replica leaves again at once:
//     the first takes main back and serves them;
//  5. it comes back, and takes main again.
func (r *run) handLease(ctx context.Context, c *cycle) error {
	if len(r.mgrs) < 2 {
		return nil
	}
	first, err := r.mainHolder(ctx)
	if err != nil {
		return err
	}
	other := 1 - first
	main := r.h.mainHost()
	c.target = fmt.Sprintf("replica %d ⇄ replica %d", first, other)
	r.mgrs[other].leave()
	if err := r.waitHolder(ctx, r.h.otherHost(), first); err != nil {
		r.mgrs[other].back()
		return err
	}
	r.mgrs[other].back()
	if err := r.waitHolder(ctx, main, other); err != nil {
		return err
	}
	r.w.claims(ctx, 3)
	r.waitReady(ctx, r.s.bound)
	r.w.claims(ctx, 3)
	r.mgrs[other].leave()
	defer r.mgrs[other].back()
	return r.waitHolder(ctx, main, first)
}

// waitReady waits (up to limit) until every live Sandbox is Ready: what the
// check then finds is its to judge. It holds the workload still, as the check
// does: while it churns, some Sandbox is always new and not Ready yet, and the
// wait ran out its whole limit (5 minutes of a short run's 12).
func (r *run) waitReady(ctx context.Context, limit time.Duration) {
	r.w.ops.Lock()
	defer r.w.ops.Unlock()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline) && ctx.Err() == nil; {
		if st, err := r.look(ctx, r.lost); err == nil && len(st.notReady) == 0 {
			return
		}
		sleep(ctx, time.Second)
	}
}
