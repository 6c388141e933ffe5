package sandboxpool

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/poolkey"
)

// probeStarting probes the starting members at once; one that answers (and whose
// features verify and seed ran) becomes ready, an overdue one that does not
// is unwanted. It answers when to look again: soon (0: no member starts),
// later when every starting member seeds (a seed's end wakes the pool).
func (p *Reconciler) probeStarting(ctx context.Context, class host.Service, key []byte, ms *poolMembers) (time.Duration, []unwanted) {
	polls := make([]time.Duration, len(ms.starting))
	seeding, late := make([]bool, len(ms.starting)), make([]bool, len(ms.starting))
	var wg sync.WaitGroup
	for i, c := range ms.starting {
		wg.Go(func() {
			m := p.probeMember(ctx, class, key, c)
			// Note: one that became ready is counted by the next pass.
			polls[i], seeding[i] = cmp.Or(m.seedPoll, memberProbeInterval), m.seedPoll > 0
			switch {
			case m.ok:
				p.markReady(class, c, m.addr)
			case ms.overdue[c.ID] && m.initFailed == "" && m.seedPoll == 0:
				late[i] = true
			case m.initFailed != "":
				// Note: its data is half-seeded; the next member tries again, after the backoff.
				_ = p.Host.Remove(ctx, c.ID)
				p.Host.ReleaseSeedLane(seedLane(p.Host, c))
				p.startFailed(types.UID(c.Labels[host.LabelPoolUID]), sandboxv1.ReasonInitFailed,
					fmt.Sprintf("member %s: %s init script %s", c.Name, class.Engine.Name(), m.initFailed))
			}
		})
	}
	wg.Wait()
	next, gone := time.Duration(0), []unwanted(nil)
	ms.seeding = map[string]bool{}
	for i, d := range polls {
		next = kit.Soonest(next, d)
		if seeding[i] {
			ms.seeding[ms.starting[i].ID] = true
		}
		if late[i] {
			gone = append(gone, unwanted{c: ms.starting[i], timedOut: true,
				why: fmt.Sprintf("it did not answer (or verify its features) within its probe deadline of %s", class.ProbeDeadline)})
		}
	}
	return next, gone
}

// removeLate removes the overdue members that did not answer (probeStarting):
// they start no longer, and are made again.
func (p *Reconciler) removeLate(ctx context.Context, pool *sandboxv1.SandboxPool, ms *poolMembers, late []unwanted) error {
	if len(late) == 0 {
		return nil
	}
	if err := p.removeUnwanted(ctx, pool, poolMembers{unwanted: late}); err != nil {
		return err
	}
	for _, u := range late {
		ms.starting = slices.DeleteFunc(ms.starting, func(c dd.ContainerSummary) bool { return c.ID == u.c.ID })
	}
	ms.missing += len(late)
	return nil
}

// memberProbe is what probing a starting member found: it answers at addr
// (ok), its seed failed (initFailed: the failing script and its error), or
// its seed runs (seedPoll: when to look again).
type memberProbe struct {
	addr       string
	ok         bool
	initFailed string
	seedPoll   time.Duration
}

// probeMember probes a starting member, then activates its features and runs
// its class's init scripts: a member counts as ready only seeded.
func (p *Reconciler) probeMember(ctx context.Context, class host.Service, key []byte, c dd.ContainerSummary) memberProbe {
	if c.State != dd.StateRunning {
		return memberProbe{}
	}
	full, err := p.Host.Inspect(ctx, c.ID)
	addr := host.Address(full, class.Network)
	if err != nil || addr == "" {
		return memberProbe{}
	}
	svc := class
	svc.Password = poolkey.DerivePassword(key, c.Labels[host.LabelMember])
	// Note: a seed starts once the probe passed and the features verified.
	if !p.Host.SeedUnderway(svc, full, addr) {
		if pr := p.Host.Probe(ctx, svc, full, addr); pr.Running {
			return memberProbe{seedPoll: pr.Poll}
		} else if !pr.Passed {
			return memberProbe{}
		}
		if len(svc.Features) > 0 {
			if act := p.Host.Activate(ctx, svc, full, addr); act.Running {
				return memberProbe{seedPoll: act.Poll}
			} else if act.Failed != "" {
				return memberProbe{}
			}
		}
	}
	if len(svc.Init) > 0 {
		seed := p.Host.Seed(ctx, svc, full, addr, seedLane(p.Host, c))
		if seed.Failed != "" {
			return memberProbe{initFailed: seed.Failed + map[bool]string{true: " (on a member whose earlier run was cut short)"}[seed.CutShort]}
		}
		if seed.Running {
			return memberProbe{seedPoll: seed.Poll}
		}
	}
	// Note: the state a claimant's reset returns to.
	if snap := p.Host.SnapshotInitial(ctx, svc, full, addr); snap.Running {
		return memberProbe{seedPoll: snap.Poll}
	} else if snap.Failed != "" {
		return memberProbe{}
	}
	return memberProbe{addr: addr, ok: true}
}

// laneKind names a pool's member seeds at the host's lane gate.
const laneKind = "SandboxPool"

// seedLane is the lane of member c's seed: one per member, its pool's.
func seedLane(h *host.Host, c dd.ContainerSummary) host.Lane {
	return h.SeedLane(laneKind, c.Labels[host.LabelNamespace], c.Labels[host.LabelPool], c.Labels[host.LabelPoolUID], c.ID)
}

// readyMember is a member that answered: when, and at which address.
type readyMember struct {
	pool, addr string
}

func (p *Reconciler) markReady(class host.Service, c dd.ContainerSummary, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ready[c.ID] = readyMember{pool: c.Labels[host.LabelPoolUID], addr: addr}
	delete(p.starts, types.UID(c.Labels[host.LabelPoolUID])) // its class works
	poolMetrics.refillSecs.WithLabelValues(class.Engine.Name()).Observe(time.Since(c.CreatedAt).Seconds())
}

func (p *Reconciler) isReady(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.ready[id]
	return ok
}

func (p *Reconciler) address(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready[id].addr
}

// ForgetHost drops what the reconciler knows of its host's members: the host's
// Lease was given up; they are listed and probed afresh when it comes back.
func (p *Reconciler) ForgetHost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.ready)
	clear(p.failures)
	clear(p.starts)
}

// forgetReady drops what is known of a pool's members that are gone or claimed.
func (p *Reconciler) forgetReady(poolUID string, members map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, m := range p.ready {
		if m.pool == poolUID && !members[id] {
			delete(p.ready, id)
		}
	}
}

func ptrOr[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}
