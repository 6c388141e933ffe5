package chaos

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

const invHostBound = "a deleted DockerHost stays while anything of its Sandboxes and pools is on it, makes nothing new, then goes within the bound"

// hostDelete is the operator decommissioning the run's host, as one action:
// the host is deleted while the tenant's Sandboxes and pool run on it; it must
// stay, and a Sandbox made meanwhile (pinned to it) must make nothing there;
// the others and the pool are deleted, and the host must be gone within the
// bound once nothing of theirs is on it. Then it is registered again, the pool
// made again, and the Sandbox that waited is made there.
func (tn *tenant) hostDelete(ctx context.Context) error {
	host := tn.r.w.host
	defer tn.reregister(context.WithoutCancel(ctx))
	before, err := tn.r.w.sandboxes(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = tn.r.h.k8s.Delete(cctx, &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: host}})
	cancel()
	if err != nil {
		return err
	}
	if done, err := tn.awaitHost(ctx, func(h *sandboxv1.DockerHost) bool {
		c := meta.FindStatusCondition(h.Status.Conditions, sandboxv1.ConditionSchedulable)
		return c != nil && c.Reason == sandboxv1.ReasonHostDeleting
	}); done || err != nil {
		return err
	}
	if err := tn.create(ctx, ""); err != nil {
		return fmt.Errorf("a Sandbox pinned to %s while it is deleted: %w", host, err)
	}
	if err := tn.drain(ctx, before); err != nil {
		return err
	}
	_, err = tn.awaitHost(ctx, nil)
	return err
}

// onHost names the containers of the run on its host, each with the object
// it serves (a Sandbox by UID, else a pool member); new says which of them
// serve a Sandbox not in before (made while the host is deleted).
func (tn *tenant) onHost(ctx context.Context, before map[string]*sandboxv1.Sandbox) (all, made []string, err error) {
	cs, err := tn.r.h.containers(ctx, tn.r.instance)
	if err != nil {
		return nil, nil, err
	}
	known := map[string]bool{}
	for _, sb := range before {
		known[string(sb.UID)] = true
	}
	for _, c := range cs {
		what := c.name + " (pool member)"
		if c.uid != "" {
			what = c.name + " (Sandbox " + c.uid + ")"
		}
		all = append(all, what)
		if c.uid != "" && !known[c.uid] {
			made = append(made, what)
		}
	}
	return all, made, nil
}

// awaitHost polls the run's host, at most the run's bound, until ok says it
// is as expected (ok nil: until it is gone). Gone while containers of the run
// are on it, or still there at the bound, is a violation; done: the action
// stops there (a violation, or the host gone before ok saw it).
func (tn *tenant) awaitHost(ctx context.Context, ok func(*sandboxv1.DockerHost) bool) (done bool, err error) {
	host := tn.r.w.host
	for end := time.Now().Add(tn.r.s.bound); ctx.Err() == nil; sleep(ctx, 500*time.Millisecond) {
		h, err := tn.r.h.dockerHost(ctx, host)
		gone := apierrors.IsNotFound(err)
		switch {
		case err != nil && !gone:
			tn.r.t.Logf("reading DockerHost %s: %v", host, err)
		case gone:
			on, _, err := tn.onHost(ctx, nil)
			if err == nil && len(on) > 0 {
				tn.r.violate(invHostBound, fmt.Sprintf("DockerHost %s is gone while it holds %v", host, on))
				return true, nil
			}
			if err == nil {
				return ok != nil, nil // gone with nothing on it: as it may
			}
		case ok != nil && ok(h):
			return false, nil
		}
		if time.Now().After(end) {
			tn.r.violate(invHostBound, fmt.Sprintf("DockerHost %s, deleted, not as expected within %s (finalizers %v, allocated %d)",
				host, tn.r.s.bound, h.Finalizers, h.Status.Allocated.Sandboxes))
			return true, nil
		}
	}
	return true, ctx.Err()
}

// drain deletes the tenant's Sandboxes of before, and its pool, and waits
// until nothing of the run is on the host (or the host is gone); a Sandbox
// made since must make nothing there while the host is being deleted.
func (tn *tenant) drain(ctx context.Context, before map[string]*sandboxv1.Sandbox) error {
	for _, sb := range before {
		if sb.DeletionTimestamp == nil {
			if err := tn.delete(ctx, sb); err != nil {
				return err
			}
		}
	}
	pool := tenantPool()
	pool.Namespace = tn.r.w.ns
	if err := tn.r.h.k8s.Delete(ctx, pool); client.IgnoreNotFound(err) != nil {
		return err
	}
	for end := time.Now().Add(tn.r.s.bound); time.Now().Before(end); sleep(ctx, 500*time.Millisecond) {
		h, err := tn.r.h.dockerHost(ctx, tn.r.w.host)
		if apierrors.IsNotFound(err) || err == nil && h.DeletionTimestamp == nil {
			return nil // awaitHost says whether it went too soon
		}
		on, made, err := tn.onHost(ctx, before)
		switch {
		case err != nil:
		case len(made) > 0:
			tn.r.violate(invHostBound, fmt.Sprintf("made on DockerHost %s while it is deleted: %v", tn.r.w.host, made))
			return nil
		case len(on) == 0:
			return nil
		}
	}
	return nil
}

// reregister registers the run's host again when it is gone (the action cut
// short: when it goes), waits until it is Ready, and makes the tenant's pool
// again.
func (tn *tenant) reregister(ctx context.Context) {
	host := tn.r.w.host
	for end := time.Now().Add(tn.r.s.bound); ; sleep(ctx, time.Second) {
		h, err := tn.r.h.dockerHost(ctx, host)
		if apierrors.IsNotFound(err) || err == nil && h.DeletionTimestamp == nil || time.Now().After(end) || tn.r.over() {
			break
		}
	}
	if err := tn.r.h.registerHosts(ctx); err != nil {
		tn.r.t.Logf("registering %s again: %v", host, err)
	}
	for end := time.Now().Add(tn.r.s.bound); time.Now().Before(end); sleep(ctx, time.Second) {
		if h, err := tn.r.h.dockerHost(ctx, host); err == nil && meta.IsStatusConditionTrue(h.Status.Conditions, sandboxv1.ConditionReady) {
			break
		}
	}
	tn.mu.Lock()
	tn.capacity = tenantLimit{changed: time.Now()}
	tn.mu.Unlock()
	pool := tenantPool()
	pool.Namespace, pool.Spec.DockerHost = tn.r.w.ns, host
	if err := tn.r.h.k8s.Create(ctx, pool); err != nil && !apierrors.IsAlreadyExists(err) {
		tn.r.t.Logf("making the pool again: %v", err)
	}
}
