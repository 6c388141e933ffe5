package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The edits a user or an orchestrator makes, and an operator's: none of them
// explains a container replaced, a password changed or a member moved.

const (
	invForgedMember = "a forged claim record takes no member"
	invWrongHost    = "a host's Sandboxes stop being Ready while it reaches another daemon"
)

// legacyClaimAnnotation is where releases before status.claims kept the claim
// record; anyone who may edit a Sandbox may write it.
const legacyClaimAnnotation = "claim.sandbox.roboco.io/"

// pick is a random live Sandbox the API server has, preferring one that
// claimed a member.
func (r *run) pick(ctx context.Context, rnd *rand.Rand) (*sandboxv1.Sandbox, error) {
	sbs, err := r.w.sandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var claimed, any []*sandboxv1.Sandbox
	for _, rec := range r.w.records() {
		sb := sbs[rec.name]
		if sb == nil || sb.UID != rec.uid || sb.DeletionTimestamp != nil {
			continue
		}
		any = append(any, sb)
		if len(sb.Status.Claims) > 0 {
			claimed = append(claimed, sb)
		}
	}
	switch {
	case len(claimed) > 0 && rnd.IntN(4) > 0:
		return claimed[rnd.IntN(len(claimed))], nil
	case len(any) > 0:
		return any[rnd.IntN(len(any))], nil
	}
	return nil, nil
}

// plainUpdate replaces a Sandbox as an orchestrator's read-modify-write Update
// (or kubectl replace) does: the object read back, its annotations emptied, a
// spec field changed (ttl), written whole.
func (r *run) plainUpdate(ctx context.Context, c *cycle, rnd *rand.Rand) error {
	for attempt := 0; attempt < 5; attempt++ {
		sb, err := r.pick(ctx, rnd)
		if err != nil || sb == nil {
			return nil // a fault of another kind is still settling: nothing to edit
		}
		sb.Annotations = nil
		sb.Spec.TTL = &metav1.Duration{Duration: time.Duration(24+rnd.IntN(24)) * time.Hour}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = r.h.k8s.Update(cctx, sb)
		cancel()
		c.target = fmt.Sprintf("%s (claims %d)", sb.Name, len(sb.Status.Claims))
		if !apierrors.IsConflict(err) {
			if err != nil {
				c.target += " (" + err.Error() + ")"
			}
			return nil
		}
	}
	return nil
}

// forgeRecord writes the release-before's claim annotation on a Sandbox, naming
// a member it did not claim: one unclaimed, or one another Sandbox claimed.
// With the workload paused for two sweeps and more, the member must stay where
// it is (serving its Sandbox, or in its pool: a pending claim may take it), the
// forger must not have it, and the annotation must be gone (removed, reported).
func (r *run) forgeRecord(ctx context.Context, c *cycle, rnd *rand.Rand) error {
	r.w.ops.Lock()
	defer r.w.ops.Unlock()
	sb, err := r.pick(ctx, rnd)
	if err != nil || sb == nil {
		return nil
	}
	cs, err := r.attributed(ctx)
	if err != nil {
		return err
	}
	var victims []container
	for _, ct := range cs {
		if ct.pool != "" && ct.uid != string(sb.UID) && !ct.setAside() &&
			slices.ContainsFunc(sb.Spec.Services, func(s sandboxv1.ServiceSpec) bool { return string(s.Engine) == ct.engine }) {
			victims = append(victims, ct)
		}
	}
	if len(victims) == 0 {
		c.target = sb.Name + " (no member to forge a record for)"
		return nil
	}
	v := victims[rnd.IntN(len(victims))]
	key := legacyClaimAnnotation + v.engine
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, v.id+"/forged")
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = r.h.k8s.Patch(cctx, &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: sb.Namespace, Name: sb.Name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))
	cancel()
	c.target = fmt.Sprintf("%s names %s %s (serving %q)", sb.Name, v.engine, v.name, v.uid)
	if err != nil {
		c.target += " (" + err.Error() + ")"
		return nil
	}
	sleep(ctx, 3*sweepInterval+2*time.Second)
	r.judgeForgery(ctx, sb, v, key)
	return nil
}

// judgeForgery: the member a forged record named is where it was, and the
// record is gone from the forger.
func (r *run) judgeForgery(ctx context.Context, forger *sandboxv1.Sandbox, v container, key string) {
	cs, err := r.attributed(ctx)
	if err != nil {
		return
	}
	sbs, err := r.w.sandboxes(ctx)
	if err != nil {
		return
	}
	i := slices.IndexFunc(cs, func(ct container) bool { return ct.id == v.id })
	switch {
	case i < 0:
		r.violate(invForgedMember, fmt.Sprintf("%s's forged record named %s (serving %q), which is gone", forger.Name, v.name, v.uid))
	case cs[i].uid == string(forger.UID):
		r.violate(invForgedMember, fmt.Sprintf("%s's forged record named %s, and it now serves %s", forger.Name, v.name, forger.Name))
	case v.uid != "" && cs[i].uid != v.uid:
		r.violate(invForgedMember, fmt.Sprintf("%s's forged record named %s, which served uid %s and now %q", forger.Name, v.name, v.uid, cs[i].uid))
	}
	if sb := sbs[forger.Name]; sb != nil && sb.UID == forger.UID && sb.Annotations[key] != "" {
		r.awaitRecordDropped(ctx, forger, key)
	}
}

// awaitRecordDropped: the forger's pass drops the forged record. The pass runs
// where the main host is driven; a host Lease being handed over (a replica
// that came back in the cycle before takes its share) drives it nowhere for a
// few seconds, so the grace starts once a replica drives it.
func (r *run) awaitRecordDropped(ctx context.Context, forger *sandboxv1.Sandbox, key string) {
	grace := 3*sweepInterval + 2*time.Second
	if _, err := r.mainHolder(ctx); err != nil {
		r.violate(invForgedMember, err.Error())
		return
	}
	last := ""
	for deadline := time.Now().Add(grace); time.Now().Before(deadline) && ctx.Err() == nil; sleep(ctx, 500*time.Millisecond) {
		sbs, err := r.w.sandboxes(ctx)
		if err != nil {
			continue
		}
		sb := sbs[forger.Name]
		if sb == nil || sb.UID != forger.UID || sb.Annotations[key] == "" {
			return
		}
		last = sb.Annotations[key]
	}
	r.violate(invForgedMember, fmt.Sprintf("%s still carries the forged record %s=%s %s after a replica drove its host", forger.Name, key, last, grace))
}

// switchEndpoint points the main DockerHost at the other daemon for hold, as
// `kubectl patch dockerhost` does (a host moved, a certificate rotated), then
// back. Meanwhile nothing may be created or removed there, and every Sandbox
// on main must stop being Ready (WrongDockerHost); back, each keeps its
// containers (the check).
func (r *run) switchEndpoint(ctx context.Context, c *cycle, hold time.Duration) error {
	r.w.ops.Lock()
	defer r.w.ops.Unlock()
	if err := r.waitBound(ctx, r.s.bound); err != nil {
		return err
	}
	main := r.h.mainHost()
	r.h.otherProxy.take()
	if err := r.h.setEndpoint(ctx, main, r.h.otherProxy.socket); err != nil {
		return err
	}
	defer func() {
		if err := r.h.setEndpoint(context.WithoutCancel(ctx), main, r.h.proxy.socket); err != nil {
			r.t.Errorf("pointing DockerHost %s back: %v", main, err)
		}
	}()
	start := time.Now()
	ready := r.waitNotReady(ctx, max(hold, time.Minute))
	c.target = fmt.Sprintf("%s → the other daemon for %s", main, hold)
	if len(ready) > 0 {
		r.violate(invWrongHost, fmt.Sprintf("%s after DockerHost %s was pointed at another daemon, still Ready: %s",
			time.Since(start).Round(time.Second), main, strings.Join(ready, "; ")))
	}
	sleep(ctx, hold-time.Since(start))
	calls, creates := r.h.otherProxy.take()
	acted := mutations(calls)
	if cs, err := r.h.other.containersOf(ctx, r.instance); err == nil && len(cs) > 0 {
		acted = append(acted, fmt.Sprintf("containers of the run there: %v", cs))
	}
	if len(acted) > 0 {
		r.violate(invForeign, fmt.Sprintf("while DockerHost %s reached another daemon: %s (creates by name: %v)", main, strings.Join(acted, ", "), creates))
	}
	return nil
}

// waitNotReady waits (up to limit) until no live Sandbox is Ready, and returns
// those still Ready.
func (r *run) waitNotReady(ctx context.Context, limit time.Duration) []string {
	var ready []string
	for deadline := time.Now().Add(limit); ; {
		ready = ready[:0]
		sbs, err := r.w.sandboxes(ctx)
		for _, rec := range r.w.records() {
			sb := sbs[rec.name]
			if sb == nil || sb.DeletionTimestamp != nil {
				continue
			}
			if cond := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); cond != nil && cond.Status == metav1.ConditionTrue {
				ready = append(ready, sb.Name)
			}
		}
		if err == nil && len(ready) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return ready
		}
		sleep(ctx, 500*time.Millisecond)
	}
}

// containersOf lists the containers of instance on the daemon.
func (d *daemon) containersOf(ctx context.Context, instance string) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := d.Docker(cctx, "ps", "-a", "--filter", "label=sandbox.roboco.io/instance="+instance, "--format", "{{.Names}}")
	return strings.Fields(out), err
}
