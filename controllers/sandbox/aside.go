package sandbox

import (
	"context"
	"fmt"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// retire removes c, a container that no longer serves w's service (outdated,
// exited, rolled out). When Docker cannot remove it and it holds the service's
// name, it is renamed aside (a Warning says so) and removed later (removeAside);
// holding another name, it is left where it is, retried on its own backoff. done
// says c is out of the service's way now; an error is one the service waits on.
func (r *Reconciler) retire(ctx context.Context, w serviceWork, c dd.ContainerSummary, res *serviceResult) (done bool, err error) {
	now := time.Now()
	if wait := r.recalls.asideDue(w.sb, c.ID, now); wait > 0 && c.Name != w.svc.Container.Name {
		res.after(wait)
		return false, nil
	}
	got, err := r.Host.Retire(ctx, c, w.svc.Container.Name)
	switch {
	case err != nil:
		return false, err
	case got.Stuck == nil:
		r.recalls.asideGone(w.sb, c.ID)
		return true, nil
	}
	wait := r.recalls.asideFailed(w.sb, c.ID, now)
	res.after(wait)
	if got.Aside == "" {
		logf.FromContext(ctx).Info("Docker cannot remove a container of the service; retrying", "container", c.Name,
			"error", got.Stuck.Error(), "retryIn", wait.Round(time.Second))
		return false, nil
	}
	res.warn(sandboxv1.EventSetAside, fmt.Sprintf("%s: Docker cannot remove container %s (%v): renamed it %s to free its name; it is removed once Docker can",
		w.svc.Engine.Name(), c.Name, got.Stuck, got.Aside))
	return true, nil
}

// removeAside removes the containers set aside for w's service once Docker can,
// each on its own backoff; until then they are left alone.
func (r *Reconciler) removeAside(ctx context.Context, w serviceWork, aside []dd.ContainerSummary, res *serviceResult) {
	now := time.Now()
	for _, c := range aside {
		if wait := r.recalls.asideDue(w.sb, c.ID, now); wait > 0 {
			res.after(wait)
			continue
		}
		if err := r.Host.Remove(ctx, c.ID); err != nil {
			wait := r.recalls.asideFailed(w.sb, c.ID, now)
			res.after(wait)
			logf.FromContext(ctx).Info("A container set aside still cannot be removed; retrying", "container", c.Name,
				"error", err.Error(), "retryIn", wait.Round(time.Second))
			continue
		}
		r.recalls.asideGone(w.sb, c.ID)
		res.event(sandboxv1.EventAsideRemoved, fmt.Sprintf("%s: removed container %s, set aside when Docker could not remove it",
			w.svc.Engine.Name(), c.Name))
	}
}
