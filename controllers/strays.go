package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandboxpool"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// strays lets go the deleted Sandboxes and pools bound to a DockerHost that
// does not exist and that this manager has no controllers for: one deleted
// while no manager ran. A host's own controllers let theirs go (Scope.Gone);
// these had none, and stayed Terminating. One controller for any number of
// such names: spec.dockerHost is the tenant's to write.
type strays struct {
	client.Client
	api      client.Reader
	recorder events.EventRecorder
	fleet    *fleet
}

func (s *strays) setupWithManager(mgr ctrl.Manager) error {
	deleting := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() }))
	if err := ctrl.NewControllerManagedBy(mgr).For(&sandboxv1.Sandbox{}, deleting).Named("sandbox-strays").WithOptions(kit.Watched(mgr, controller.Options{})).
		Complete(reconcile.Func(s.sandbox)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).For(&sandboxv1.SandboxPool{}, deleting).Named("sandboxpool-strays").WithOptions(kit.Watched(mgr, controller.Options{})).
		Complete(reconcile.Func(s.pool))
}

func (s *strays) sandbox(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sb := &sandboxv1.Sandbox{}
	if err := s.Get(ctx, req.NamespacedName, sb); err != nil || sb.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if stray, err := s.stray(ctx, sb.Spec.DockerHost); !stray || err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, sandbox.LetGo(ctx, s.Client, s.api, s.recorder, sb)
}

func (s *strays) pool(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &sandboxv1.SandboxPool{}
	if err := s.Get(ctx, req.NamespacedName, pool); err != nil || pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if stray, err := s.stray(ctx, pool.Spec.DockerHost); !stray || err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, sandboxpool.LetGo(ctx, s.Client, s.api, s.recorder, pool)
}

// stray says whether the DockerHost name has no controllers here and does
// not exist (read live: one registered a moment ago is no stray's).
func (s *strays) stray(ctx context.Context, name string) (bool, error) {
	if _, driven := s.fleet.get(name); name == "" || driven {
		return false, nil // unbound: placement's; driven: its host's
	}
	err := s.api.Get(ctx, client.ObjectKey{Name: name}, &sandboxv1.DockerHost{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

func newStrays(mgr ctrl.Manager, f *fleet) *strays {
	return &strays{Client: mgr.GetClient(), api: mgr.GetAPIReader(), recorder: kit.Bounded(mgr.GetEventRecorder("sandbox-controller")), fleet: f}
}
