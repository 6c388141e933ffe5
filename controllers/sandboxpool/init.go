package sandboxpool

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
)

// initSources maps a ConfigMap's change to the pools on this host whose
// service's init names it: their class changes, so do their members.
func (p *Reconciler) initSources(ctx context.Context, obj client.Object) []reconcile.Request {
	var list sandboxv1.SandboxPoolList
	if err := p.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index.DockerHost: p.Scope.Name}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, pool := range list.Items {
		if in := pool.Spec.Service.Init; in != nil && in.ConfigMapRef != nil && in.ConfigMapRef.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pool)})
		}
	}
	return out
}
