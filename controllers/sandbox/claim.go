package sandbox

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// claimService serves the service with a ready member of a matching pool in the
// Sandbox's namespace, when the Sandbox allows it and there is one: the member
// reserved for it this pass (recorded, its password already the Secret's), or
// one taken now, whose claim is recorded and whose password is rotated to the
// Secret's after the rename. claimed is false when nothing was claimed (the
// caller provisions cold).
func (r *Reconciler) claimService(ctx context.Context, w serviceWork, res serviceResult) (serviceResult, bool) {
	if !r.mayClaim(w) {
		return res, false
	}
	e := w.svc.Engine.Name()
	if conflict := r.stillHeld(ctx, w); conflict != nil && w.reserved == nil {
		return r.nameConflict(ctx, w.sb, res, conflict), true
	}
	prev, had := r.claims.Of(w.sb)[e]
	m, ok := r.takeMember(w)
	if !ok {
		sandboxMetrics.claims.WithLabelValues(e, "miss").Inc()
		return res, false
	}
	start := time.Now()
	r.pokePool(ctx, m)
	if w.reserved == nil {
		rec := claim.Record{ID: m.ID, Credentials: host.CredentialsHash(w.svc.Password)}
		if err := r.claims.Write(ctx, r.Client, w.sb, map[string]claim.Record{e: rec}, nil); err != nil {
			// Note: nothing renamed yet, but the member may be recorded: it is not offered again.
			_ = r.Host.Remove(ctx, m.ID)
			res.containers = part{reason: sandboxv1.ReasonCreating, message: fmt.Sprintf("recording the claim of a pool member failed: %v; retrying", err)}
			res.after(retryLater(ctx))
			return res, true
		}
		chaosplant.CrashAfter(chaosplant.AfterClaimRecorded)
	}
	got, err := r.Host.Claim(ctx, w.svc, m)
	switch {
	case got.Stale:
		// Note: the member may be another replica's Sandbox's now: left alone
		// (a reserved one too: not removed as unclaimed).
		res.claimedReserved = w.reserved != nil
		res.containers = part{reason: sandboxv1.ReasonCreating, message: "the Docker host was given up while claiming pool member " + m.Name + "; retrying"}
		res.after(retryLater(ctx))
		return res, true
	case got.Taken != nil:
		r.holders.set(w.sb.UID, e, got.Taken.Existing.ID)
		r.giveBack(ctx, w, m, prev, had)
		return r.nameConflict(ctx, w.sb, res, got.Taken), true
	case err != nil:
		// Note: a reserved member not renamed is removed by the pass (unreserve).
		res.claimedReserved = w.reserved != nil && got.Renamed
		return res.dockerFailed(ctx, err, "claiming pool member "+m.Name), true
	}
	res.claimedReserved = w.reserved != nil
	if got.Rotating {
		return r.claimedRotating(w, got, res), true
	}
	sandboxMetrics.claims.WithLabelValues(e, "hit").Inc()
	sandboxMetrics.claimSeconds.WithLabelValues(e).Observe(time.Since(start).Seconds())
	res.event(sandboxv1.EventClaimed, fmt.Sprintf("%s: claimed a warm member of pool %s as %s in %s; its password is the Sandbox's",
		e, m.Pool, w.svc.Container.Name, time.Since(start).Round(time.Millisecond)))
	return r.claimedReady(w, got.Container, res), true
}

// giveBack returns member m, whose claim met the service's name taken, to its
// pool: its record undone, it is offered again. A reserved one goes (the
// Sandbox's Secret holds its password), as one whose record stays (Undo
// failed): a member recorded by a Sandbox it does not serve is no one's.
func (r *Reconciler) giveBack(ctx context.Context, w serviceWork, m host.Member, prev claim.Record, had bool) {
	if w.reserved == nil && r.claims.Undo(ctx, r.Client, w.sb, w.svc.Engine.Name(), prev, had) == nil {
		r.Host.Warm().GiveBack(m.ID)
		return
	}
	_ = r.Host.Remove(ctx, m.ID)
}

// pokePool has member m's pool refill: once this pass has written its status,
// so that the refill's start does not compete with the claim, or at once when
// the pool has no member left to offer (its next claims go cold until it
// refills, and a claim that rotates lasts as long as its rotation).
func (r *Reconciler) pokePool(ctx context.Context, m host.Member) {
	poke := func() { r.PokePool(types.NamespacedName{Namespace: m.Namespace, Name: m.Pool}) }
	if r.Host.Warm().Offered(m.PoolUID) == 0 {
		poke()
	}
	afterPass(ctx, poke)
}

// takeMember is the member reserved for the service, or one taken from the
// pools now.
func (r *Reconciler) takeMember(w serviceWork) (host.Member, bool) {
	if w.reserved != nil {
		return *w.reserved, true
	}
	return r.Host.Warm().Take(w.sb.Namespace, host.ClassHash(w.svc.Container), poolNames(w.sb))
}

// mayClaim: the Sandbox does not opt out, and the service can be served by a
// member (no network move needed).
func (r *Reconciler) mayClaim(w serviceWork) bool {
	if p := w.sb.Spec.Pools; p != nil && p.Policy == sandboxv1.PoolPolicyNever {
		return false
	}
	return host.Claimable(w.svc)
}

// claimedReady reports a member just claimed: its rotation logged in with the
// Sandbox's password, and its pool verified its features.
func (r *Reconciler) claimedReady(w serviceWork, c dd.Container, res serviceResult) serviceResult {
	res.status.ContainerID = c.ID
	res.containers, res.probes = okPart(sandboxv1.ReasonRunning), okPart(sandboxv1.ReasonReady)
	if w.svc.Network == "" {
		res.status.Host = host.Address(c, w.svc.Network)
	}
	res.status.Features = make([]sandboxv1.Feature, len(w.svc.Features))
	for i, f := range w.svc.Features {
		res.status.Features[i] = sandboxv1.Feature(f)
	}
	res.status.Ready = true
	return res
}

// claimedRotating reports a member just claimed whose rotation runs on,
// beside the pass: not ready until a later pass's probe logs in with the
// Sandbox's password (or its recovery, rotateClaimed, sees the rotation end).
func (r *Reconciler) claimedRotating(w serviceWork, got host.Claimed, res serviceResult) serviceResult {
	res.status.ContainerID = got.Container.ID
	if w.svc.Network == "" {
		res.status.Host = host.Address(got.Container, w.svc.Network)
	}
	res.containers = okPart(sandboxv1.ReasonRunning)
	return res.rotating(fmt.Sprintf("%s: claimed a warm member as %s; rotating its password to the Sandbox's",
		w.svc.Engine.Name(), w.svc.Container.Name), got.Poll)
}

// rotating reports a claimed member whose rotation runs, looked at again at poll.
func (res serviceResult) rotating(message string, poll time.Duration) serviceResult {
	res.probes = part{reason: sandboxv1.ReasonProbing, message: message}
	res.after(poll)
	return res
}

// rotateClaimed finishes a claim a crash interrupted after the rename, or
// whose rotation runs on: the member's password, from its pool's key, is
// rotated to the Sandbox's (a repeat is harmless), as a step beside the
// pass. passed false with detail when it could not be yet; poll > 0 while it
// runs.
func (r *Reconciler) rotateClaimed(ctx context.Context, w serviceWork, c dd.Container, addr string) (passed bool, detail string, poll time.Duration) {
	memberPassword, err := r.PoolKeys.MemberPassword(ctx, w.sb.Namespace, c.Labels)
	if err != nil {
		return false, err.Error(), 0
	}
	switch rot := r.Host.Rotate(ctx, w.svc, c.ID, memberPassword, addr); {
	case rot.Running:
		return false, "rotating its password to the Sandbox's", rot.Poll
	case rot.Failed != "":
		return false, rot.Failed, 0
	}
	return true, "", 0
}

// poolNames are the pools a Sandbox may claim from (none: any).
func poolNames(sb *sandboxv1.Sandbox) []string {
	if p := sb.Spec.Pools; p != nil {
		return p.Names
	}
	return nil
}
