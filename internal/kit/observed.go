package kit

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Observed tells observe the outcome of every pass of r (nil: r as it is).
func Observed(r reconcile.Reconciler, observe func(ctrl.Request, ctrl.Result, error)) reconcile.Reconciler {
	if observe == nil {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		result, err := r.Reconcile(ctx, req)
		observe(req, result, err)
		return result, err
	})
}
