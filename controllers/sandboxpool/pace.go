package sandboxpool

import (
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// nextPass says when the pool's next pass is due after a pass that made
// created of the wanted members.
func (p *Reconciler) nextPass(pool *sandboxv1.SandboxPool, ms *poolMembers, created, wanted int, probeAgain time.Duration) time.Duration {
	if wait := p.createWait(pool.UID); len(ms.starting)+created == 0 && wait > 0 {
		return wait
	}
	if created > 0 || created < ms.missing && p.Host.Warm().Claiming() {
		// Note: a claim in flight lasts tens of ms; then refills go on.
		return memberProbeInterval
	}
	if created < ms.missing {
		// Note: a freed slot wakes the pool (refills), a pulled image too;
		// this is the backstop.
		return kit.Soonest(kit.Soonest(probeAgain, p.createWait(pool.UID)), kit.Jitter(slotHold))
	}
	if probeAgain > 0 {
		return probeAgain
	}
	if created < wanted {
		// Note: a quota's room freed re-queues the pool (its watch); this is the backstop.
		return kit.Jitter(kit.StalledRecheck)
	}
	// Note: a member passing maxAge is replaced on time, not at the next resync.
	return kit.Soonest(kit.Jitter(p.Options.ResyncPeriod), ms.expires)
}

// memberProbeInterval paces the probes of starting members: a member becomes
// claimable soon after it answers, and a few starting members cost few execs.
const memberProbeInterval = 250 * time.Millisecond

// memberCreateRecheck backs up the word that a create beside the pass ended.
const memberCreateRecheck = 5 * time.Second
