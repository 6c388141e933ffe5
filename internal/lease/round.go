package lease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// round is one pass over the Leases: observe them, renew this replica's member
// Lease and host Leases, give up what is over its share, take free ones up to it.
func (t *Table) round(ctx context.Context) error {
	hosts, err := t.Hosts(ctx)
	if err != nil {
		return err
	}
	var list coordv1.LeaseList
	if err := t.api.List(ctx, &list, client.InNamespace(t.Config.Namespace)); err != nil {
		return err
	}
	byHost, members := t.observe(list.Items)
	live := 1
	for name, m := range members {
		if name != t.memberName() && ptr.Deref(m.Spec.HolderIdentity, "") != "" && !t.expired(m) {
			live++
		}
	}
	err = errors.Join(t.renewMember(ctx, members[t.memberName()]), t.renewHeld(ctx, hosts))
	share := (len(hosts) + live - 1) / live
	t.shed(ctx, share)
	return errors.Join(err, t.take(ctx, hosts, byHost, share))
}

// observe records when each Lease was last seen to change, and sorts the list
// into host Leases (by DockerHost) and member Leases (by name).
func (t *Table) observe(items []coordv1.Lease) (byHost, members map[string]*coordv1.Lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	byHost, members = map[string]*coordv1.Lease{}, map[string]*coordv1.Lease{}
	now := time.Now()
	for i := range items {
		l := &items[i]
		key := l.Name
		if host, ok := l.Labels[labelLeaseHost]; ok {
			byHost[host] = l
		} else if _, ok := l.Labels[labelLeaseMember]; ok {
			members[l.Name] = l
		} else {
			continue
		}
		if o, ok := t.observed[key]; !ok || o.resourceVersion != l.ResourceVersion {
			t.observed[key] = observation{resourceVersion: l.ResourceVersion, holder: ptr.Deref(l.Spec.HolderIdentity, ""), since: now}
		}
	}
	return byHost, members
}

// expired: l has not changed for a whole Duration by this replica's clock.
func (t *Table) expired(l *coordv1.Lease) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.observed[l.Name]
	return !ok || time.Since(o.since) > t.Config.Duration
}

// memberName is this replica's member Lease: a hash of its identity, which may
// hold characters a name may not.
func (t *Table) memberName() string {
	sum := sha256.Sum256([]byte(t.Config.Identity))
	return "sandbox-manager-" + hex.EncodeToString(sum[:6])
}

func hostLeaseName(host string) string { return "sandbox-dockerhost-" + host }

func (t *Table) newLease(name string, labels map[string]string) *coordv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.Config.Namespace, Labels: labels},
		Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To(t.Config.Identity), LeaseDurationSeconds: ptr.To(int32(t.Config.Duration / time.Second)),
			AcquireTime: &now, RenewTime: &now}}
}

func (t *Table) renewMember(ctx context.Context, l *coordv1.Lease) error {
	if l == nil {
		return client.IgnoreAlreadyExists(t.client.Create(ctx, t.newLease(t.memberName(), map[string]string{labelLeaseMember: "true"})))
	}
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
	l.Spec.HolderIdentity = ptr.To(t.Config.Identity)
	return t.client.Update(ctx, l)
}

// renewHeld renews every host Lease held. One that cannot be renewed (another
// replica took it, or the API server did not answer) is lost once it would have
// expired: this replica stops acting on the host before any other may start.
func (t *Table) renewHeld(ctx context.Context, hosts []string) error {
	var errs []error
	for _, host := range t.heldHosts() {
		if !slices.Contains(hosts, host) {
			t.release(ctx, host)
			continue
		}
		t.mu.Lock()
		h := t.held[host]
		t.mu.Unlock()
		started := time.Now()
		l, err := t.writeOwn(ctx, h.lease, func(l *coordv1.Lease) { l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(started)) })
		switch {
		case err == nil:
			t.keep(host, l, started)
			if started.Sub(h.renewed) >= t.Config.Duration-t.Config.RetryPeriod {
				// Note: the hold lapsed (rounds failed: the API server did not
				// answer), and the host's passes meanwhile were dropped; nobody
				// else held it (the Lease still named this replica), so it is
				// taken again: everything bound to it is looked at again.
				logf.FromContext(ctx).Info("Renewed the Lease of a Docker host after its hold lapsed; looking again at what is bound to it", "dockerHost", host)
				t.OnAcquire(host)
			}
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err) || time.Since(h.renewed) > t.Config.Duration-t.Config.RetryPeriod:
			t.lose(ctx, host, err)
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeOwn applies change to a Lease this replica holds and writes it. An earlier
// write may have landed with its answer lost (the manager stopping mid-request,
// an API server timing out after committing), leaving l's resourceVersion behind:
// on a conflict the Lease is read again and, while it still names this replica
// (no other takes it without writing its own name), changed and written again.
func (t *Table) writeOwn(ctx context.Context, l *coordv1.Lease, change func(*coordv1.Lease)) (*coordv1.Lease, error) {
	next := l.DeepCopy()
	change(next)
	err := t.client.Update(ctx, next)
	if !apierrors.IsConflict(err) {
		return next, err
	}
	fresh := &coordv1.Lease{}
	if getErr := t.api.Get(ctx, client.ObjectKeyFromObject(l), fresh); getErr != nil {
		return nil, getErr
	}
	if ptr.Deref(fresh.Spec.HolderIdentity, "") != t.Config.Identity {
		return nil, err
	}
	change(fresh)
	return fresh, t.client.Update(ctx, fresh)
}

func (t *Table) heldHosts() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.held))
	for h := range t.held {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func (t *Table) keep(host string, l *coordv1.Lease, renewed time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held[host] = heldLease{lease: l, renewed: renewed}
}

func (t *Table) lose(ctx context.Context, host string, why error) {
	logf.FromContext(ctx).Info("Lost the Lease of a Docker host; no longer acting on it", "dockerHost", host, "reason", why)
	t.mu.Lock()
	delete(t.held, host)
	t.mu.Unlock()
	t.OnLose(host)
}
