package sandboxpool

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// hostGone: the pool's DockerHost was deleted, and no manager reaches its
// members. A deleted pool is let go at once (LetGo), and forgotten.
func (p *Reconciler) hostGone(ctx context.Context, req ctrl.Request) error {
	pool := &sandboxv1.SandboxPool{}
	if err := p.Get(ctx, req.NamespacedName, pool); err != nil || pool.Spec.DockerHost != p.Scope.Name {
		return client.IgnoreNotFound(err)
	}
	if pool.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(pool, PoolFinalizer) {
		return nil
	}
	p.refills.forget(pool.UID)
	p.Host.Warm().Forget(string(pool.UID), nil)
	p.Keys.Forget(pool.UID)
	return LetGo(ctx, p.Client, p.API, p.Recorder, pool)
}

// LetGo lets a deleted pool bound to a DockerHost that no longer exists go at
// once, as a Sandbox is: waiting would hold it forever. The members its status
// last counted there are named in a Warning (the orphan sweep removes them
// should that host be registered again); a pool that waited made none. Its
// quota's room goes with it.
func LetGo(ctx context.Context, c client.Client, api client.Reader, rec events.EventRecorder, pool *sandboxv1.SandboxPool) error {
	if !controllerutil.ContainsFinalizer(pool, PoolFinalizer) {
		return nil
	}
	if n := pool.Status.Replicas; n > 0 {
		rec.Eventf(pool, nil, corev1.EventTypeWarning, sandboxv1.EventDockerHostReleased, sandboxv1.ActionTeardown,
			"let go without teardown: its DockerHost %s was deleted, so its %d unclaimed members there are not removed; "+
				"the orphan sweep removes them should that host be registered again", pool.Spec.DockerHost, n)
	}
	if err := quota.Release(ctx, c, api, pool.Namespace, pool.UID); err != nil {
		return err
	}
	return kit.RemoveFinalizer(ctx, c, pool, PoolFinalizer)
}
