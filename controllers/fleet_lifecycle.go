package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
)

// A host's life in this replica: its DockerHost deleted and registered again
// (Retire, Revive), its Lease taken and given up (wake, forget).

// Retire stops the controllers of a host whose DockerHost was deleted from
// acting: a Sandbox pinned to its name afterwards is told so, never made on the
// daemon the host was. What is still bound to it (waiting: the host went only
// once nothing of theirs was on it) is told at once, not at its next recheck
// (a quota's wait looks again every 30 s).
func (f *fleet) Retire(ctx context.Context, name string) {
	if hs, ok := f.get(name); ok && !hs.removed.Swap(true) {
		f.mgr.GetLogger().Info("DockerHost deleted: its controllers act on nothing until it is registered again", "dockerHost", name)
		hs.requeueBound(ctx, "deleted")
	}
}

// Revive lets a retired host's controllers act again (its DockerHost is back),
// and re-queues what is bound to it.
func (hs *hostSet) Revive(ctx context.Context) {
	if hs.removed.Swap(false) {
		hs.requeueBound(ctx, "registered again")
	}
}

// requeueBound re-queues the Sandboxes bound to the host: it was deleted, or
// registered again.
func (hs *hostSet) requeueBound(ctx context.Context, what string) {
	keys, err := index.BoundTo(ctx, hs.sandboxes.Client, hs.name)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Listing the Sandboxes of a DockerHost "+what, "dockerHost", hs.name)
	}
	for _, k := range keys {
		hs.sandboxes.Enqueue(k)
	}
}

// wake looks again at everything bound to a host this replica just took: the
// passes skipped while another replica held it.
func (f *fleet) wake(ctx context.Context, name string) {
	select {
	case f.taken <- event.TypedGenericEvent[*sandboxv1.DockerHost]{Object: &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: name}}}:
	default: // its periodic observation comes soon enough
	}
	hs, ok := f.get(name)
	if !ok {
		return // its controllers, set up later, list what is bound to it
	}
	// Note: also on gain: a pass of the previous holding may have ended after the loss.
	hs.forget()
	keys, err := index.BoundTo(ctx, f.mgr.GetClient(), name)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Listing the Sandboxes of a Docker host taken over", "dockerHost", name)
	}
	for _, k := range keys {
		hs.sandboxes.Enqueue(k)
	}
	var pools sandboxv1.SandboxPoolList
	if err := f.mgr.GetClient().List(ctx, &pools, client.MatchingFields{index.DockerHost: name}); err == nil {
		for i := range pools.Items {
			hs.pools.Poke(types.NamespacedName{Namespace: pools.Items[i].Namespace, Name: pools.Items[i].Name})
		}
	}
}

// forget drops what this replica knows of a host whose Lease it gives up: its
// warm offers, the claims it recorded lately, its
// Sandboxes' backoffs, its members' probes and its identity proof. What
// another replica does with the host meanwhile is listed again on gain (wake).
func (f *fleet) forget(name string) {
	if hs, ok := f.get(name); ok {
		hs.forget()
	}
}

// forget drops what the host's controllers know beyond what they list again.
func (hs *hostSet) forget() {
	if chaosplant.Active(chaosplant.WarmKeptOnLeaseLoss) {
		return
	}
	hs.sandboxes.ForgetHost()
	hs.pools.ForgetHost()
}
