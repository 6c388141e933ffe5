package dockerhost

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
)

// allocation counts, from the cache, what is bound to h (Sandboxes, and pools'
// members) into its status, and drops the reservations that count includes, or
// that expired. Both come from one snapshot and are written in one update with
// h's resourceVersion, so allocated plus reservations never falls below what is
// bound. It returns how many objects are bound.
func (r *Reconciler) allocation(ctx context.Context, h *sandboxv1.DockerHost) (int32, error) {
	var sandboxes sandboxv1.SandboxList
	if err := r.List(ctx, &sandboxes, client.MatchingFields{index.DockerHost: h.Name}); err != nil {
		return 0, err
	}
	var pools sandboxv1.SandboxPoolList
	if err := r.List(ctx, &pools, client.MatchingFields{index.DockerHost: h.Name}); err != nil {
		return 0, err
	}
	counted := map[string]bool{}
	var total capacity.Demand
	opts := r.Options
	for i := range sandboxes.Items {
		sb := &sandboxes.Items[i]
		counted[string(sb.UID)] = true
		total.Add(capacity.OfSandbox(opts, sb))
	}
	for i := range pools.Items {
		pool := &pools.Items[i]
		counted[string(pool.UID)] = true
		total.Add(capacity.OfPool(opts, pool))
	}
	h.Status.Allocated = sandboxv1.Allocation{Sandboxes: total.Sandboxes, Memory: resource.NewQuantity(total.Memory.Value(), resource.BinarySI)}
	var keep []sandboxv1.Reservation
	for _, res := range capacity.PruneExpired(h.Status.Reservations) {
		if !counted[res.UID] {
			keep = append(keep, res)
		}
	}
	h.Status.Reservations = keep
	return int32(len(sandboxes.Items) + len(pools.Items)), nil
}

// ensureSet makes sure this manager drives h: its controllers set up, on a
// driver dialled from its spec (the implicit host's is the manager's own).
func (r *Reconciler) ensureSet(ctx context.Context, h *sandboxv1.DockerHost) (DrivenHost, error) {
	hs, ok := r.Fleet.Host(h.Name)
	if ok && h.Name == r.Implicit {
		return hs, nil
	}
	if ok {
		if endpoint, tlsVersion := hs.Dialled(); endpoint == h.Spec.Endpoint && tlsVersion == currentTLSVersion(ctx, r.API, h) {
			return hs, nil
		}
	}
	driver, tlsVersion, err := r.dialHost(ctx, h)
	if err != nil {
		return nil, err
	}
	if ok {
		logf.FromContext(ctx).Info("Re-dialling the Docker host", "endpoint", h.Spec.Endpoint)
		hs.Redial(driver, h.Spec.Endpoint, tlsVersion)
		return hs, nil
	}
	hs, err = r.Fleet.AddDialled(h.Name, driver, h.Spec.Endpoint, tlsVersion)
	if err != nil {
		return nil, fmt.Errorf("setting up the controllers of Docker host %s: %w", h.Name, err)
	}
	return hs, nil
}

func (r *Reconciler) dialHost(ctx context.Context, h *sandboxv1.DockerHost) (dd.Driver, string, error) {
	if r.Dial != nil {
		d, err := r.Dial(ctx, h)
		return d, "", err
	}
	return dial(ctx, r.API, h, r.UserAgent)
}

// currentTLSVersion is the resourceVersion of h's TLS Secret ("" without TLS or
// when it cannot be read: the dial then says why).
func currentTLSVersion(ctx context.Context, api client.Reader, h *sandboxv1.DockerHost) string {
	if h.Spec.TLS == nil {
		return ""
	}
	_, version, err := tlsConfig(ctx, api, h.Spec.TLS.SecretRef)
	if err != nil {
		return ""
	}
	return version
}

// SetupWithManager watches DockerHosts, and the binding and deletion of
// Sandboxes and pools, which change a host's allocation.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toHost := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		if name := index.DockerHostOf(obj); name != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dockerhost").
		For(&sandboxv1.DockerHost{}).
		Watches(&sandboxv1.Sandbox{}, toHost, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&sandboxv1.SandboxPool{}, toHost, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.Fleet.Taken(), &handler.TypedEnqueueRequestForObject[*sandboxv1.DockerHost]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4, NeedLeaderElection: ptr.To(r.Fleet.Manager() == "")}).
		Complete(r)
}
