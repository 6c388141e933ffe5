package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
	// retryNow drops what waits out a backoff: the daemon is back.
	retryNow func()
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
		if ev.Type == dd.EventExecDie && !host.StepEnded(ev) {
			continue // a probe's or another short exec's end
		}
		if ev.Type == dd.EventDestroy {
			w.enqueueWaiting(ctx, ev)
		}
		switch {
		case ev.Type == dd.EventResync:
			log.Info("Docker event stream resynced; re-queueing every Sandbox")
			w.forgetHost()
			w.retryNow()
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

// ownEventTTL is how long an event of our own action is expected. Docker delivers
// them within milliseconds; an expectation whose event was lost (the stream broke,
// and its resync re-queues everything anyway) must not hide a later one for long.
const ownEventTTL = time.Minute

// ownActions remembers the Docker actions this manager took, so that the Docker
// watch can tell their events from a change it must react to. Without it a
// container whose start fails (Docker creates it, refuses to start it, and the
// driver removes it: events create, destroy) re-queued its Sandbox at once, ahead
// of any backoff, forever.
//
// Note: only die, oom and destroy of our containers matter to the watch (create
// and start are always our own doing); what is tracked here is which of those we
// caused: the removals we asked for (by container ID) and the containers the
// driver removed after a failed start (by name: their ID is never returned).
type ownActions struct {
	mu sync.Mutex
	// removing are container IDs we remove: their die and destroy are ours.
	removing map[string]time.Time
	// creating are container names being created: a destroy of that name (with our
	// labels) is the driver removing what it made and could not start.
	creating map[string]time.Time
	// renaming are container IDs we rename (claims): their rename is ours, and
	// the pass that made it re-queues the member's pool once it has written.
	renaming map[string]time.Time
}

func newOwnActions() *ownActions {
	return &ownActions{removing: map[string]time.Time{}, creating: map[string]time.Time{}, renaming: map[string]time.Time{}}
}

// wrap returns driver with its removals and failed creates remembered.
func (o *ownActions) wrap(driver dd.Driver) dd.Driver { return ownDriver{Driver: driver, own: o} }

// caused reports whether ev (of one of our containers) is the doing of an action
// this manager took; a destroy consumes its expectation.
func (o *ownActions) caused(ev dd.Event) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prune(time.Now())
	switch ev.Type {
	case dd.EventCreate, dd.EventStart:
		return true
	case dd.EventDie, dd.EventOOM:
		_, ours := o.removing[ev.ID]
		return ours
	case dd.EventRename:
		_, ours := o.renaming[ev.ID]
		delete(o.renaming, ev.ID)
		return ours
	case dd.EventDestroy:
		if _, ours := o.removing[ev.ID]; ours {
			delete(o.removing, ev.ID)
			return true
		}
		if _, ours := o.creating[ev.Name]; ours {
			delete(o.creating, ev.Name)
			return true
		}
	}
	return false
}

func (o *ownActions) expect(m map[string]time.Time, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m[key] = time.Now()
}

func (o *ownActions) forget(m map[string]time.Time, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(m, key)
}

// prune drops expectations past ownEventTTL. Callers hold o.mu.
func (o *ownActions) prune(now time.Time) {
	for _, m := range []map[string]time.Time{o.removing, o.creating, o.renaming} {
		for k, at := range m {
			if now.Sub(at) > ownEventTTL {
				delete(m, k)
			}
		}
	}
}

// ownDriver is a driver whose removals and failed creates are remembered in own.
type ownDriver struct {
	dd.Driver
	own *ownActions
}

// Remove expects the die and destroy of nameOrID, which callers give as an ID.
func (d ownDriver) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	d.own.expect(d.own.removing, nameOrID)
	return d.Driver.Remove(ctx, nameOrID, stopTimeout)
}

// Rename expects the rename of nameOrID, which callers give as an ID.
func (d ownDriver) Rename(ctx context.Context, nameOrID, newName string) error {
	d.own.expect(d.own.renaming, nameOrID)
	return d.Driver.Rename(ctx, nameOrID, newName)
}

// CreateContainer expects a destroy of the name while it runs (it may come before
// the call returns), and keeps expecting it when the create failed.
func (d ownDriver) CreateContainer(ctx context.Context, spec dd.ContainerSpec) (dd.Container, error) {
	d.own.expect(d.own.creating, spec.Name)
	c, err := d.Driver.CreateContainer(ctx, spec)
	var taken *dd.ConflictError
	if err == nil || errors.As(err, &taken) {
		// Made, or held by another container, whose destroy is not ours to hide.
		d.own.forget(d.own.creating, spec.Name)
	}
	return c, err
}

// sandboxKey is the Sandbox a container's labels name.
func sandboxKey(labels map[string]string) (types.NamespacedName, bool) {
	key := types.NamespacedName{Namespace: labels[host.LabelNamespace], Name: labels[host.LabelName]}
	return key, key.Namespace != "" && key.Name != ""
}
