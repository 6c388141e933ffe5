package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// errStatusRaced: a status write was refused because the Sandbox's status
// changed on the server since the pass read it (another replica's pass, one
// that held the host's Lease after this one lost it, or a placement): what
// this pass learned may be older than what is written, so it is dropped and
// the Sandbox looked at again.
var errStatusRaced = errors.New("the Sandbox's status changed since the pass read it")

// lockedAttempts bounds the writes of one status when only the Sandbox's spec
// or metadata moved meanwhile (a tenant editing its own labels).
const lockedAttempts = 3

// seen is what the pass knows the server holds: the Sandbox as it read it, or
// as its own last write returned it (its finalizer, claim records, status).
type seen struct {
	rv     string
	status sandboxv1.SandboxStatus
}

// wrote notes what one of the pass's own writes returned (kit.NoteWrite).
func (p *pass) wrote(obj client.Object) {
	sb, ok := obj.(*sandboxv1.Sandbox)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if older(p.seen.rv, sb.ResourceVersion) {
		p.seen = seen{rv: sb.ResourceVersion, status: *sb.Status.DeepCopy()}
	}
}

func (p *pass) known() seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// patchStatus writes sb's status as a merge patch from before, conditional on
// the server holding what the pass knows: a write from a pass that began
// before another writer's (across a Lease's move between replicas) must not
// put back what that writer replaced. When only the spec or metadata moved
// (the status is as the pass knows it), the write is made again on the new
// version; when the status moved, errStatusRaced.
func (r *Reconciler) patchStatus(ctx context.Context, before, sb *sandboxv1.Sandbox) error {
	k := seen{rv: before.ResourceVersion, status: before.Status}
	if p := passOf(ctx); p != nil {
		k = p.known()
	}
	for attempt := 1; ; attempt++ {
		before.ResourceVersion = k.rv
		err := kit.PatchStatus(ctx, r.Client, before, sb, client.MergeFromWithOptimisticLock{})
		if !apierrors.IsConflict(err) || attempt == lockedAttempts {
			return err
		}
		fresh := &sandboxv1.Sandbox{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sb), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !equality.Semantic.DeepEqual(fresh.Status, k.status) {
			sandboxMetrics.statusConflicts.WithLabelValues("dropped").Inc()
			r.recalls.saw(fresh)
			return fmt.Errorf("%w (its resourceVersion %s, the pass knew %s)", errStatusRaced, fresh.ResourceVersion, k.rv)
		}
		sandboxMetrics.statusConflicts.WithLabelValues("retried").Inc()
		k.rv = fresh.ResourceVersion
	}
}

// raceRetry is how soon a Sandbox whose status write lost a race is looked at
// again, from what the server held then (recalls.saw).
const raceRetry = 50 * time.Millisecond

// raced turns a status write that lost a race (errStatusRaced) into a new
// look soon: not a failure, nothing to back off from.
func raced(ctx context.Context, result ctrl.Result, err error) (ctrl.Result, error) {
	if !errors.Is(err, errStatusRaced) {
		return result, err
	}
	logf.FromContext(ctx).V(1).Info("Status not written: another writer changed it since the pass read it; looking again", "reason", err.Error())
	return ctrl.Result{RequeueAfter: kit.Jitter(raceRetry)}, nil
}
