package lease

import (
	"context"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// shed gives up the Leases held past share (the last by name), so that a replica
// that joined gets its part.
func (t *Table) shed(ctx context.Context, share int) {
	held := t.heldHosts()
	for i := len(held) - 1; i >= share; i-- {
		logf.FromContext(ctx).Info("Giving the Lease of a Docker host up to the replicas that joined", "dockerHost", held[i], "share", share)
		t.release(ctx, held[i])
	}
}

// freeTimeout bounds freeing a Lease, which is completed even when the replica
// is stopping: one left held waits out its whole Duration.
const freeTimeout = 5 * time.Second

// release stops acting on host, then frees its Lease for another replica (when
// that fails, the Lease expires instead).
func (t *Table) release(ctx context.Context, host string) {
	t.mu.Lock()
	h, ok := t.held[host]
	delete(t.held, host)
	t.mu.Unlock()
	if !ok {
		return
	}
	t.OnLose(host)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), freeTimeout)
	defer cancel()
	if _, err := t.writeOwn(ctx, h.lease, free); err != nil {
		logf.FromContext(ctx).Info("Could not free a host Lease; it expires instead", "dockerHost", host, "error", err.Error())
	}
}

// free gives a Lease up: any replica may take it at once.
func free(l *coordv1.Lease) { l.Spec.HolderIdentity = ptr.To("") }

func (t *Table) releaseAll(ctx context.Context) {
	for _, host := range t.heldHosts() {
		t.release(ctx, host)
	}
}

// leave empties this replica's member Lease: the others stop counting it live
// at their next round instead of after Duration.
func (t *Table) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), freeTimeout)
	defer cancel()
	var l coordv1.Lease
	err := t.api.Get(ctx, client.ObjectKey{Namespace: t.Config.Namespace, Name: t.memberName()}, &l)
	if err == nil {
		_, err = t.writeOwn(ctx, &l, free)
	}
	if client.IgnoreNotFound(err) != nil {
		logf.FromContext(ctx).Info("Could not free this replica's member Lease; it expires instead", "error", err.Error())
	}
}

// take acquires free host Leases (missing, freed, or unchanged for a whole
// Duration) until this replica holds its share. Every write carries the Lease's
// resourceVersion: of two replicas taking one Lease, one gets a conflict.
func (t *Table) take(ctx context.Context, hosts []string, byHost map[string]*coordv1.Lease, share int) error {
	for _, host := range hosts {
		if len(t.heldHosts()) >= share {
			return nil
		}
		if t.holdsLease(host) {
			continue
		}
		started := time.Now()
		l, ok := byHost[host]
		if !ok {
			l = t.newLease(hostLeaseName(host), map[string]string{labelLeaseHost: host})
			if err := t.client.Create(ctx, l); err != nil {
				continue // another replica made it first
			}
		} else {
			if ptr.Deref(l.Spec.HolderIdentity, "") != "" && !t.expired(l) {
				continue
			}
			l = l.DeepCopy()
			now := metav1.NewMicroTime(started)
			l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = ptr.To(t.Config.Identity), &now, &now
			l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
			if err := t.client.Update(ctx, l); err != nil {
				continue
			}
		}
		t.keep(host, l, started)
		logf.FromContext(ctx).Info("Took the Lease of a Docker host", "dockerHost", host)
		t.OnAcquire(host)
	}
	return nil
}

func (t *Table) holdsLease(host string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.held[host]
	return ok
}
