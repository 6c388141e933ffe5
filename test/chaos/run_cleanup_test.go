package chaos

import (
	"context"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// teardown deletes what the run made while its manager still runs, then makes
// sure nothing of the run is left (a planted bug may have left anything).
func (r *run) teardown(ctx context.Context) {
	if _, err := r.w.sandboxes(ctx); err != nil {
		_ = r.h.plane.startAPIServer() // a run that ended inside a fault
	}
	_ = r.h.k8s.DeleteAllOf(ctx, &sandboxv1.Sandbox{}, client.InNamespace(r.w.ns))
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if sbs, err := r.w.sandboxes(ctx); err == nil && len(sbs) == 0 {
			break
		}
		sleep(ctx, time.Second)
	}
	_ = r.h.k8s.DeleteAllOf(ctx, &sandboxv1.SandboxPool{}, client.InNamespace(r.w.ns))
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		var pools sandboxv1.SandboxPoolList
		if err := r.h.k8s.List(ctx, &pools, client.InNamespace(r.w.ns)); err == nil && len(pools.Items) == 0 {
			break
		}
		sleep(ctx, time.Second)
	}
	for _, m := range r.mgrs {
		m.stop()
	}
	// Whatever is left: finalizers of a manager that could not finish, containers.
	if sbs, err := r.w.sandboxes(ctx); err == nil {
		for _, sb := range sbs {
			sb.Finalizers = nil
			_ = r.h.k8s.Update(ctx, sb)
		}
	}
	var pools sandboxv1.SandboxPoolList
	if err := r.h.k8s.List(ctx, &pools, client.InNamespace(r.w.ns)); err == nil {
		for i := range pools.Items {
			pools.Items[i].Finalizers = nil
			_ = r.h.k8s.Update(ctx, &pools.Items[i])
		}
	}
	if cs, err := r.h.containers(ctx, r.instance); err == nil {
		for _, c := range cs {
			_, _ = r.h.daemon.Docker(ctx, "rm", "-fv", c.id)
		}
	}
	for _, rec := range append(r.w.records(), r.w.goneRecords()...) {
		r.h.removeOwner(ctx, rec)
	}
	if out, err := r.h.daemon.Docker(ctx, "network", "ls", "-q", "--filter", "label="+instanceLabel+"="+r.instance); err == nil {
		for _, id := range strings.Fields(out) {
			_, _ = r.h.daemon.Docker(ctx, "network", "rm", id)
		}
	}
}

// instanceLabel marks what a run made on the daemon (its manager's
// containers carry it too).
const instanceLabel = "sandbox.roboco.io/instance"
