package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Watches are the watches that wake w's waiters, as one source of a
// controller (WatchesRawSource): a SandboxPolicy changed may allow a pinned
// host; so may new labels on the host, whose cordon lifted, capacity raised
// or freed admits what waits for it; a quota's room freed (or raised) admits
// what waits for it; a ConfigMap of init scripts made or changed seeds what
// its class names anew (as metadata only: the scripts are read where needed).
func (w Waiters) Watches(c cache.Cache) source.SyncingSource {
	configMaps := &metav1.PartialObjectMetadata{}
	configMaps.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	thisHost := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == w.Host })
	return sources{
		source.Kind[client.Object](c, &sandboxv1.SandboxPolicy{}, handler.EnqueueRequestsFromMapFunc(w.Stalled)),
		source.Kind[client.Object](c, &sandboxv1.DockerHost{}, handler.EnqueueRequestsFromMapFunc(w.OnHost), thisHost),
		source.Kind[client.Object](c, configMaps, handler.EnqueueRequestsFromMapFunc(w.ForInit)),
		source.Kind[client.Object](c, &sandboxv1.SandboxQuota{}, handler.EnqueueRequestsFromMapFunc(w.ForQuota)),
	}
}

// sources start and sync together.
type sources []source.SyncingSource

func (s sources) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	for _, src := range s {
		if err := src.Start(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (s sources) WaitForSync(ctx context.Context) error {
	for _, src := range s {
		if err := src.WaitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s sources) String() string {
	return fmt.Sprintf("admission waiters %v", []source.SyncingSource(s))
}
