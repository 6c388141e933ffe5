package sandbox

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// foreignSecrets watches, each by its name, the Secrets that stall a Sandbox
// (SecretConflict), so that the Sandbox resumes as soon as such a Secret is
// deleted. The manager caches only its own Secrets (SecretLabel); a watch of one
// name, metadata only, costs nothing for the rest of the cluster's Secrets and
// lasts only while the conflict does.
type foreignSecrets struct {
	client  client.WithWatch
	enqueue func(types.NamespacedName)

	mu sync.Mutex
	// ctx is the manager's (the leader's) lifetime; watches run under it.
	ctx      context.Context
	watching map[types.NamespacedName]context.CancelFunc
}

func newForeignSecrets(mgr ctrl.Manager, enqueue func(types.NamespacedName)) (*foreignSecrets, error) {
	c, err := client.NewWithWatch(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	return &foreignSecrets{client: c, enqueue: enqueue, watching: map[types.NamespacedName]context.CancelFunc{}}, nil
}

// start binds the watches to ctx (the manager's lifetime).
func (f *foreignSecrets) start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctx = ctx
}

// watch makes sure the Secret name in key's namespace is watched for key; when it
// is deleted, or the watch ends for any reason, key is re-queued (a pass that
// still finds the conflict watches again).
func (f *foreignSecrets) watch(key types.NamespacedName, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.watching[key]; ok || f.ctx == nil {
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	f.watching[key] = cancel
	go f.run(ctx, key, name)
}

// stop ends key's watch, if any.
func (f *foreignSecrets) stop(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cancel, ok := f.watching[key]; ok {
		cancel()
		delete(f.watching, key)
	}
}

func (f *foreignSecrets) run(ctx context.Context, key types.NamespacedName, name string) {
	defer f.stop(key)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	w, err := f.client.Watch(ctx, list, client.InNamespace(key.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	if err != nil {
		// Note: no re-queue, or a watch the API server refuses would loop; the
		// stalled recheck comes back, and watches again.
		logf.FromContext(ctx).Error(err, "Watching a foreign Secret", "secret", name, "sandbox", key)
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return // stopped: the conflict is over, or the manager stops
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Deleted || ev.Type == watch.Error {
				// Deleted, or the watch broke (the deletion may fall in the gap):
				// a pass looks, and watches again if the Secret is still there.
				f.enqueue(key)
				return
			}
		}
	}
}
