// Package sandbox is the Sandbox reconciler of one Docker host. Reconcile is
// the table of contents of one pass; each phase is in the file, or the
// sub-package, named for it: the finalizer and the teardown (teardown.go), the
// host it is bound to (binding.go), its lifetime (lifetime/: ttl, owner
// tracking), its admission, its credentials Secret (credentials.go, with the
// pool members reserved for it: reserve.go), each service (services.go:
// observed, made, probed, or claimed from a warm pool), and one publish per
// pass (status.go). The Docker event watch re-queues it (watch.go).
package sandbox

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox/lifetime"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// phase is one step of a pass. It says when the Sandbox wants another look
// (the soonest of all steps wins) and whether the pass goes on; an error ends
// it too.
type phase func(ctx context.Context, p *pass) (result ctrl.Result, goOn bool, err error)

// Reconcile reads like the table of contents of one pass. Each phase returns
// early when its condition already holds; one that stops the pass before its
// lifetime is judged has written what it had, any later one has what the pass
// learned published (close).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Note: once bindHost proved the host, the pass's Docker calls reach that dial only.
	ctx, p, err := r.begin(dd.WithProof(ctx), req)
	if p == nil {
		return ctrl.Result{}, err
	}
	defer p.end()
	phases := []phase{
		r.ensureFinalizer,   // persisted before anything exists on the Docker host
		r.bindHost,          // the Docker host it is bound to, proven
		r.judgeLifetime,     // past its ttl or its owner's deadline, it is deleted
		r.admitHere,         // its policies allow this host; the host and its quotas take what it asks
		r.ensureCredentials, // its Secret, read or made
		r.writeBinding,      // its binding written before anything is made on the host
		r.provisionServices, // every service observed, made or claimed, probed, summarized
	}
	if !p.sb.DeletionTimestamp.IsZero() {
		phases = []phase{r.teardownHere, r.removeContainers, r.removeFinalizer}
	}
	for _, step := range phases {
		result, goOn, err := step(ctx, p)
		p.result.RequeueAfter = kit.Soonest(p.result.RequeueAfter, result.RequeueAfter)
		if err != nil || !goOn {
			p.err = err
			break
		}
	}
	result, err := r.close(ctx, p)
	return raced(ctx, result, err)
}

// begin reads the Sandbox and starts a pass over it, or says why there is none
// (nil): its DockerHost was deleted (hostGone), another replica holds the host,
// the Sandbox is gone or bound to another host.
func (r *Reconciler) begin(ctx context.Context, req ctrl.Request) (context.Context, *pass, error) {
	if r.Scope.Gone() {
		return ctx, nil, r.hostGone(ctx, req)
	}
	if !r.Scope.Active() {
		return ctx, nil, nil // the replica that holds the host's Lease acts
	}
	sb := &sandboxv1.Sandbox{}
	if err := r.Get(ctx, req.NamespacedName, sb); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctx, nil, r.dropLeftoverOf(ctx, req.NamespacedName)
		}
		return ctx, nil, err
	}
	// Note: an owned Secret's event reaches every host's queue; only the Sandbox's host acts.
	if sb.Spec.DockerHost != r.Scope.Name {
		return ctx, nil, nil
	}
	ctx = logf.IntoContext(ctx, logf.FromContext(ctx).WithValues("agentID", sb.Spec.AgentID))
	r.recalls.current(sb)
	ctx, p := r.recalls.startPass(ctx, sb)
	return ctx, p, nil
}

// close ends a pass. One its gates stopped (no finalizer yet, not on its host,
// its life over) or a deleted Sandbox's wrote what it had; any other publishes
// what it learned, then comes back at its soonest deadline, or after its
// backoff.
func (r *Reconciler) close(ctx context.Context, p *pass) (ctrl.Result, error) {
	if !p.alive {
		return p.result, p.err
	}
	if err := r.publish(ctx, p.before, p.sb, p.creds); err != nil {
		return ctrl.Result{}, errors.Join(p.err, err)
	}
	result, err := lifetime.WithOwnerDeadline(p.result, p.err, p.life.OwnerLeft)
	if err != nil {
		return ctrl.Result{}, err
	}
	result.RequeueAfter = kit.Soonest(result.RequeueAfter, p.life.TTLLeft)
	return r.recalls.pace(ctx, p.sb, result), nil
}

// judgeLifetime deletes a Sandbox past its ttl or its owner's deadline (its
// status written, nothing more done), or notes how long it has left.
func (r *Reconciler) judgeLifetime(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	judge := lifetime.Judge{Client: r.Client, API: r.APIReader, Driver: r.Driver, Recorder: r.Recorder, Options: r.Options,
		Now: r.now, RetryIn: retryLater, OwnerGone: sandboxMetrics.ownerGoneDeletions}
	life, err := judge.Of(ctx, p.sb)
	if err != nil || life.Ended {
		return ctrl.Result{}, false, errors.Join(err, r.writeStatus(ctx, p.before, p.sb))
	}
	p.life, p.alive = life, true
	return ctrl.Result{}, true, nil
}

// admitHere checks its namespace's policy allows the host, and that the host
// and its quotas take what it asks. A refused growth of a Sandbox that runs
// leaves what runs as it is (held: its services are still observed and probed).
func (r *Reconciler) admitHere(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	v, err := r.admission(ctx, p.sb)
	switch {
	case err != nil || v.retry:
		return v.result, false, err
	case v.why != "" && !v.held(p.sb, r):
		v.wait(p.sb)
		return v.result, false, nil
	case v.why != "":
		p.held = &v // its recheck comes with the services' (provisionServices)
	}
	return ctrl.Result{}, true, nil
}

// publish is a pass's one write of what it learned: the Secret's hosts when they
// changed (first, so a client that sees Ready reads a current Secret), then status.
func (r *Reconciler) publish(ctx context.Context, before, sb *sandboxv1.Sandbox, creds *credentials) error {
	var err error
	if creds != nil && creds.made() == nil {
		err = r.publishSecret(ctx, sb, creds)
	}
	return errors.Join(err, r.writeStatus(ctx, before, sb))
}
