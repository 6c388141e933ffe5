package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// watchBuffer bounds the events waiting for the Sandbox watch; past it the watch
// loses events and re-queues every Sandbox once it catches up.
const watchBuffer = 4096

// setupDockerWatch indexes Sandboxes by owner container and adds the Docker event
// watch to the manager.
func (r *SandboxReconciler) setupDockerWatch(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &sandboxv1.Sandbox{}, ownerIndex, r.indexOwner); err != nil {
		return err
	}
	return mgr.Add(&dockerWatch{events: r.events, reader: mgr.GetCache(), enqueue: r.enqueue})
}

// dockerWatch turns Docker container events into reconcile requests, so a container
// that dies or vanishes, or an owner container that stops or starts, is noticed at
// once without polling. After its stream resyncs (events may have been missed) it
// re-queues every Sandbox.
//
// Note: owner containers are not ours and carry none of our labels, so the stream
// cannot be filtered by label; it is one stream of every container's lifecycle.
// Ours route by their labels, any other container by name through the owner index
// of the informer cache: a map lookup per event.
type dockerWatch struct {
	events  *hostEvents
	reader  client.Reader
	enqueue func(types.NamespacedName)
}

// NeedLeaderElection: only the leader acts on events.
func (w *dockerWatch) NeedLeaderElection() bool { return true }

func (w *dockerWatch) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("docker-events")
	events, err := w.events.subscribe(ctx, "sandbox", watchBuffer)
	if err != nil {
		return err
	}
	for ev := range events {
		switch {
		case ev.Type == dd.EventResync:
			log.Info("Docker event stream resynced; re-queueing every Sandbox")
			w.enqueueAll(ctx)
		case ev.Type == dd.EventLost:
			log.Info("Docker events lost; re-queueing every Sandbox once the stream resyncs")
		case isSandboxContainer(ev.Labels):
			if key, ok := sandboxKey(ev.Labels); ok {
				w.enqueue(key)
			}
		case ev.Type == dd.EventStart || ev.Type == dd.EventDie || ev.Type == dd.EventDestroy:
			w.enqueueOwned(ctx, ev.Name)
		}
	}
	return nil
}

// enqueueOwned re-queues the Sandboxes whose owner container is name.
func (w *dockerWatch) enqueueOwned(ctx context.Context, name string) {
	if name == "" {
		return
	}
	var list sandboxv1.SandboxList
	// Note: read-only use of cached objects; no copy per event of every container.
	if err := w.reader.List(ctx, &list, client.MatchingFields{ownerIndex: name}, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "Looking up the Sandboxes of an owner container", "owner", name)
		return
	}
	for i := range list.Items {
		w.enqueue(types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
}

func (w *dockerWatch) enqueueAll(ctx context.Context) {
	var list sandboxv1.SandboxList
	if err := w.reader.List(ctx, &list); err != nil {
		logf.FromContext(ctx).Error(err, "Listing Sandboxes after an event stream resync")
		return
	}
	for i := range list.Items {
		w.enqueue(types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
}
