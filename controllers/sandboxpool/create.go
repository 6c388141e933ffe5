package sandboxpool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/poolkey"
)

// create makes up to the missing members, as many as the refill slots leave
// beside the members starting across pools; it returns how many it made. While a claim is in flight on
// the host it makes none (the caller re-queues soon): a member's start competes
// for the CPU the claim's rotation needs. A pool with no ready member left
// refills at once, since its claims go cold anyway.
func (p *Reconciler) create(ctx context.Context, pool *sandboxv1.SandboxPool, key []byte, ms poolMembers) (int, error) {
	want := ms.missing
	if len(ms.ready) > 0 && p.Host.Warm().Claiming() || p.createWait(pool.UID) > 0 {
		want = 0 // Note: its starting members are counted all the same.
	}
	errs := make([]error, p.refills.take(pool.UID, client.ObjectKeyFromObject(pool), startingNow(ms.starting, ms.seeding, time.Now())+ms.creating, want))
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			errs[i] = p.createMember(ctx, pool, key)
			p.refills.done(pool.UID, errs[i] == nil)
		})
	}
	wg.Wait()
	made := 0
	failed := ms.failed
	for _, err := range errs {
		switch {
		case err == nil:
			made++
		case !errors.Is(err, errImagePending):
			failed = append(failed, err)
		}
	}
	return made, errors.Join(failed...)
}

var errImagePending = errors.New("the image is not present yet")

// memberPrefix begins the names of pool's members.
func memberPrefix(pool *sandboxv1.SandboxPool) string {
	return host.MemberPrefix + string(pool.UID)[:8] + "-"
}

// createMember makes one member: a random nonce names it and, with the pool's
// key, gives its password.
func (p *Reconciler) createMember(ctx context.Context, pool *sandboxv1.SandboxPool, key []byte) error {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	svc, err := p.Class.Member(ctx, pool, poolkey.DerivePassword(key, nonce))
	if err != nil {
		return err
	}
	svc.Container.Name = memberPrefix(pool) + nonce
	svc.Container.Labels[host.LabelMember] = nonce
	svc.Container.Labels[host.LabelConfigHash] = host.Fingerprint(svc.Container)
	// Note: a create that outlasts the inline wait goes on beside the pass
	// (members counts it); it is made as far as this pass goes.
	got, err := p.Host.Ensure(ctx, svc, 0, host.PoolWaiterPrefix+pool.Namespace+"/"+pool.Name)
	switch {
	case got.Pull.Err != nil:
		return got.Pull.Err
	case !got.Pull.Present:
		return errImagePending
	}
	return err
}

// offer hands the ready members to claims, oldest first.
func (p *Reconciler) offer(epoch uint64, pool *sandboxv1.SandboxPool, class host.Service, key []byte, ms poolMembers) {
	ready := append(slices.Clone(ms.ready), ms.offeredClaimed...)
	slices.SortFunc(ready, func(a, b dd.ContainerSummary) int { return a.CreatedAt.Compare(b.CreatedAt) })
	offered := make([]host.Member, 0, len(ready))
	for _, c := range ready {
		offered = append(offered, host.Member{ID: c.ID, Name: c.Name, Namespace: pool.Namespace, Pool: pool.Name,
			PoolUID: string(pool.UID), Class: class.Container.Labels[host.LabelClass],
			Password: poolkey.DerivePassword(key, c.Labels[host.LabelMember]), Address: p.address(c.ID)})
	}
	p.Host.Warm().Offer(epoch, string(pool.UID), offered)
}
