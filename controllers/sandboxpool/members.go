package sandboxpool

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// poolMembers is what a pass found of a pool's containers.
type poolMembers struct {
	ready, starting []dd.ContainerSummary // unclaimed, of the current class
	// seeding are the starting members whose seed runs or waits: their
	// start's burst is over, so they hold no refill slot.
	seeding map[string]bool
	// overdue are the starting members past their probe deadline: they go
	// unless they answer now.
	overdue  map[string]bool
	unwanted []unwanted    // unclaimed, to remove
	claimed  int           // renamed to a Sandbox's service
	creating int           // being created beside the passes
	failed   []error       // creates that failed beside the passes
	missing  int           // members to make
	expires  time.Duration // until the next member passes maxAge (0: none)
	// offeredClaimed: the claimed ones, running, that a planted bug offers
	// (chaosplant.ClaimedOfferedAgain); none in a normal build.
	offeredClaimed []dd.ContainerSummary
}

type unwanted struct {
	c   dd.ContainerSummary
	why string
	// timedOut: it did not answer within its probe deadline.
	timedOut bool
}

// list is every container made for the pool, claimed or not. Note: of any
// instance: the pool's UID is this API server's, so what carries it is the
// pool's whatever instance made it (an operator may rename --instance).
func (p *Reconciler) list(ctx context.Context, pool *sandboxv1.SandboxPool) ([]dd.ContainerSummary, error) {
	return p.Host.Driver().List(ctx, map[string]string{host.LabelPoolUID: string(pool.UID)})
}

// members sorts the pool's containers. A member a claim took (this manager's
// memory) or that a Sandbox's claim records (its password may be in that
// Sandbox's Secret, before the rename) is neither counted, offered nor
// removed: the claim owns it from then on.
func (p *Reconciler) members(ctx context.Context, pool *sandboxv1.SandboxPool, class host.Service) (poolMembers, error) {
	ms := poolMembers{overdue: map[string]bool{}}
	cs, err := p.list(ctx, pool)
	if err != nil {
		return ms, err
	}
	// Note: after the list, so that a create ending between the two is listed.
	creating, failed := p.Host.MemberCreates(memberPrefix(pool))
	ms.creating, ms.failed = len(creating), failed
	present, unclaimed := map[string]bool{}, map[string]bool{}
	for _, c := range cs {
		present[c.ID], unclaimed[c.ID] = true, host.IsMemberName(c.Name)
		if creating[c.Name] {
			continue // half made (created, not started): its create goes on
		}
		taken := host.IsMemberName(c.Name) && p.Host.Warm().Taken(c.ID)
		if host.IsMemberName(c.Name) && !taken {
			if taken, err = index.Recorded(ctx, p.Client, pool.Namespace, c.ID); err != nil {
				return ms, err
			}
		}
		switch why := p.judgeMember(pool, class, c); {
		case !host.IsMemberName(c.Name):
			ms.claimed++
			if chaosplant.Active(chaosplant.ClaimedOfferedAgain) && c.State == dd.StateRunning {
				ms.offeredClaimed = append(ms.offeredClaimed, c)
			}
		case taken:
		case why != "":
			ms.unwanted = append(ms.unwanted, unwanted{c: c, why: why})
		case p.isReady(c.ID):
			ms.ready = append(ms.ready, c)
		default:
			// Note: one past its probe deadline (not seeding: a seed has its own
			// bound) goes if this pass's probe fails too (probeStarting): a
			// manager that just started, or regained its host's Lease, knows no
			// member as ready.
			if time.Since(c.CreatedAt) > class.ProbeDeadline && !p.Host.StepsUnderway(c.ID) {
				ms.overdue[c.ID] = true
			}
			ms.starting = append(ms.starting, c)
		}
	}
	p.Host.Warm().Forget(string(pool.UID), present)
	p.forgetReady(string(pool.UID), unclaimed)
	want := int(ptrOr(pool.Spec.Replicas, 1))
	// Note: the surplus goes starting ones first, then the newest ready.
	for have := len(ms.ready) + len(ms.starting) + ms.creating; have > want && len(ms.ready)+len(ms.starting) > 0; have-- {
		var c dd.ContainerSummary
		if n := len(ms.starting); n > 0 {
			c, ms.starting = ms.starting[n-1], ms.starting[:n-1]
		} else {
			c, ms.ready = ms.ready[len(ms.ready)-1], ms.ready[:len(ms.ready)-1]
		}
		ms.unwanted = append(ms.unwanted, unwanted{c: c, why: "the pool is scaled down"})
	}
	ms.missing = max(0, want-len(ms.ready)-len(ms.starting)-ms.creating)
	if maxAge := effectiveMaxAge(pool, class); maxAge > 0 {
		for _, c := range append(slices.Clone(ms.ready), ms.starting...) {
			ms.expires = kit.Soonest(ms.expires, max(time.Until(c.CreatedAt.Add(maxAge)), time.Millisecond))
		}
	}
	return ms, nil
}

// judgeMember says why an unclaimed member must go, or "".
func (p *Reconciler) judgeMember(pool *sandboxv1.SandboxPool, class host.Service, c dd.ContainerSummary) string {
	switch {
	case c.Labels[host.LabelClass] != class.Container.Labels[host.LabelClass]:
		return "its class is outdated (the pool's spec or the operator's settings changed)"
	case c.State == dd.StateCreated:
		// Note: a member whose create goes on is not judged (members), so one
		// still created was left by a create cut short (its manager killed
		// before the start, or the start and the cleanup failed): nothing will
		// start it.
		return "it was never started (its creation was cut short)"
	case c.State != dd.StateRunning:
		return "it is " + string(c.State)
	case pool.Spec.MaxAge != nil && time.Since(c.CreatedAt) > effectiveMaxAge(pool, class):
		return fmt.Sprintf("it is older than maxAge %s", effectiveMaxAge(pool, class))
	}
	return ""
}

// removeUnwanted removes the members that must go, taking them off the offer first.
func (p *Reconciler) removeUnwanted(ctx context.Context, pool *sandboxv1.SandboxPool, ms poolMembers) error {
	for _, u := range ms.unwanted {
		if !p.Host.Warm().Withdraw(string(pool.UID), u.c.ID) {
			continue // a claim took it meanwhile
		}
		if err := p.Host.Remove(ctx, u.c.ID); err != nil {
			return fmt.Errorf("removing member %s: %w", u.c.Name, err)
		}
		p.Host.ReleaseSeedLane(seedLane(p.Host, u.c))
		if reason := p.startFailureOf(u); reason != "" {
			p.startFailed(pool.UID, reason, fmt.Sprintf("member %s: %s", u.c.Name, u.why))
		}
		p.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, sandboxv1.EventMemberReplaced, sandboxv1.ActionReconcile,
			"removed member %s: %s", u.c.Name, u.why)
	}
	return nil
}
