package sandbox

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
)

// watchBuffer bounds the events waiting for the Sandbox watch; past it the watch
// loses events and re-queues every Sandbox once it catches up.
const watchBuffer = 4096

// setupDockerWatch adds the Docker event watch of the reconciler's host to the manager.
func (r *Reconciler) setupDockerWatch(mgr ctrl.Manager) error {
	return mgr.Add(&dockerWatch{events: r.Events, own: r.own, reader: mgr.GetCache(), enqueue: r.Enqueue, host: r.Scope.Name, leaderOnly: r.Scope.LeaderOnly,
		enqueuePool: func(k types.NamespacedName) { r.PokePool(k) }, forgetHost: r.Identity.Forget})
}

// dockerWatch turns Docker container events into reconcile requests, so a container
// that dies or vanishes, an owner container that stops or starts, or a container
// name that is freed is noticed at once without polling. After its stream resyncs
// (events may have been missed) it re-queues every Sandbox.
//
// Note: owner containers are not ours and carry none of our labels, so the stream
// cannot be filtered by label; it is one stream of every container's lifecycle.
// Ours route by their labels, any other container by name through the indexes of
// the informer cache: a map lookup per event. Events of this manager's own actions
// re-queue nothing (ownActions): a pass that failed waits for its backoff.
type dockerWatch struct {
	events *eventhub.Shared
	own    *ownActions
	// host is the DockerHost the events come from: names are looked up on it.
	host       string
	leaderOnly bool
	reader     client.Reader
	enqueue    func(types.NamespacedName)
	// enqueuePool re-queues a SandboxPool.
	enqueuePool func(types.NamespacedName)
	// forgetHost drops the proof of the Docker host's identity when the stream
	// breaks: the daemon that answers afterwards may be another one.
	forgetHost func()
}

// NeedLeaderElection: events are watched where the host's controllers run.
func (w *dockerWatch) NeedLeaderElection() bool { return w.leaderOnly }

func (w *dockerWatch) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("docker-events")
	events, err := w.events.Subscribe(ctx, "sandbox", watchBuffer)
	if err != nil {
		return err
	}
	for ev := range events {
		if ev.Type == dd.EventDestroy {
			w.enqueueWaiting(ctx, ev)
		}
		switch {
		case ev.Type == dd.EventResync:
			log.Info("Docker event stream resynced; re-queueing every Sandbox")
			w.forgetHost()
			w.enqueueAll(ctx)
		case ev.Type == dd.EventLost:
			log.Info("Docker events lost; re-queueing every Sandbox once the stream resyncs")
			w.forgetHost()
		case ev.Labels[host.LabelPoolUID] != "":
			w.poolEvent(ctx, ev)
		case host.IsSandboxContainer(ev.Labels):
			if key, ok := sandboxKey(ev.Labels); ok && !w.own.caused(ev) {
				w.enqueue(key)
			}
		case ev.Type == dd.EventStart || ev.Type == dd.EventDie || ev.Type == dd.EventDestroy:
			w.enqueueOwned(ctx, ev.Name)
		}
	}
	return nil
}

// poolEvent re-queues a pool member's pool, and once claimed (renamed to a
// Sandbox's service container) the Sandbox it serves. Note: it carries no
// Sandbox labels (they cannot change at claim), so the name finds the Sandbox.
func (w *dockerWatch) poolEvent(ctx context.Context, ev dd.Event) {
	if w.own.caused(ev) {
		return
	}
	w.enqueuePool(types.NamespacedName{Namespace: ev.Labels[host.LabelNamespace], Name: ev.Labels[host.LabelPool]})
	if ev.Type == dd.EventDestroy || host.IsMemberName(ev.Name) {
		return // a destroy re-queued the Sandboxes of its name already
	}
	var list sandboxv1.SandboxList
	if err := w.reader.List(ctx, &list, client.MatchingFields{index.ContainerName: index.OnHost(w.host, ev.Name)}, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "Looking up the Sandboxes of a container name", "container", ev.Name)
		return
	}
	for i := range list.Items {
		w.enqueue(types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
}

// enqueueWaiting re-queues the Sandboxes whose service container name a destroyed
// container held (a Sandbox stalled on NameConflict resumes), except the one the
// container belonged to.
func (w *dockerWatch) enqueueWaiting(ctx context.Context, ev dd.Event) {
	var list sandboxv1.SandboxList
	if err := w.reader.List(ctx, &list, client.MatchingFields{index.ContainerName: index.OnHost(w.host, ev.Name)}, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "Looking up the Sandboxes of a container name", "container", ev.Name)
		return
	}
	for i := range list.Items {
		if string(list.Items[i].UID) != ev.Labels[host.LabelUID] {
			w.enqueue(types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
		}
	}
}

// enqueueOwned re-queues the Sandboxes whose owner container is name.
func (w *dockerWatch) enqueueOwned(ctx context.Context, name string) {
	if name == "" {
		return
	}
	var list sandboxv1.SandboxList
	// Note: read-only use of cached objects; no copy per event of every container.
	if err := w.reader.List(ctx, &list, client.MatchingFields{index.Owner: index.OnHost(w.host, name)}, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "Looking up the Sandboxes of an owner container", "owner", name)
		return
	}
	for i := range list.Items {
		w.enqueue(types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
}

func (w *dockerWatch) enqueueAll(ctx context.Context) {
	keys, err := index.BoundTo(ctx, w.reader, w.host)
	if err != nil {
		logf.FromContext(ctx).Error(err, "Listing Sandboxes after an event stream resync")
		return
	}
	for _, key := range keys {
		w.enqueue(key)
	}
}
