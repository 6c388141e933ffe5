package sandboxpool

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// stallAfter is how many members in a row may fail before the pool says it is
// stalled: one failure can be the host's, two of the same class are the pool's.
const stallAfter = 2

// startFailure is what the members of a pool that failed in a row, before any
// became claimable, tell: how many, the last one's reason and words, and when
// the next member may be made (the retry backoff: 1s, doubling, at most 5m).
// Without it, a class that cannot start (memory too small, a feature the image
// lacks, a key no member answers to) was made and removed again every 250ms,
// taking the host's refill slots from every other tenant's pools.
type startFailure struct {
	n               int
	reason, message string
	next            time.Time
}

// startFailed records a member that failed before it became claimable.
func (p *Reconciler) startFailed(uid types.UID, reason, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.starts[uid]
	if f == nil {
		f = &startFailure{}
		p.starts[uid] = f
	}
	f.n++
	f.reason, f.message = reason, message
	f.next = time.Now().Add(kit.Jitter(host.Delay(kit.RetryBackoff, f.n-1)))
}

// createWait is how long the pool's next member must wait (0: none).
func (p *Reconciler) createWait(uid types.UID) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.starts[uid]; f != nil {
		return max(0, time.Until(f.next))
	}
	return 0
}

// reportStarts says, once members fail in a row, that the pool is stalled, in
// the last one's words and with when the next is made.
func (p *Reconciler) reportStarts(pool *sandboxv1.SandboxPool) {
	p.mu.Lock()
	var f startFailure
	if s := p.starts[pool.UID]; s != nil {
		f = *s
	}
	p.mu.Unlock()
	if f.n < stallAfter {
		return
	}
	msg := fmt.Sprintf("%d members in a row failed before they could be claimed, the last: %s; the next is made in %s",
		f.n, f.message, max(0, time.Until(f.next)).Round(time.Second))
	kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, f.reason, msg)
	kit.SetCondition(pool, sandboxv1.ConditionStalled, metav1.ConditionTrue, f.reason, msg)
}

// startFailureOf says whether an unclaimed member that must go failed to start
// (its reason, or ""): it exited, or did not answer within its probe deadline,
// before it ever became claimable.
func (p *Reconciler) startFailureOf(c unwanted) string {
	if p.isReady(c.c.ID) {
		return ""
	}
	switch {
	case c.timedOut:
		return sandboxv1.ReasonProbeTimeout
	case c.c.State == dd.StateExited || c.c.State == dd.StateDead:
		return sandboxv1.ReasonExited
	}
	return ""
}

// effectiveMaxAge is the pool's maxAge, but never under its members' probe
// deadline: a member must have the time to answer before it is old.
func effectiveMaxAge(pool *sandboxv1.SandboxPool, class host.Service) time.Duration {
	if pool.Spec.MaxAge == nil {
		return 0
	}
	return max(pool.Spec.MaxAge.Duration, class.ProbeDeadline)
}
