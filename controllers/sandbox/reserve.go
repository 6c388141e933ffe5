package sandbox

import (
	"context"
	"errors"
	"fmt"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// reserve takes, for a Sandbox whose first Secret is about to be made, a ready
// pool member for each service that may claim one, and records the claims in
// one status patch (with the Sandbox's binding to its host, when the pass
// made it). The Secret is then made with the members' own passwords,
// which no one was ever given, so the claim that follows is a rename with no
// rotation (see docs/pools.md). A member is recorded before its password
// reaches the Secret, so that no pool offers it again: this manager's Warm
// knows it taken, and after a restart the records do (index.ClaimedContainer).
// Services with no member left are not reserved: they claim later (with a
// rotation) or start cold.
//
// kept are the own passwords of members already renamed for the Sandbox's
// services, by engine (see renamedClaims): the Secret is made with them and
// nothing is taken for their services.
func (r *Reconciler) reserve(ctx context.Context, sb *sandboxv1.Sandbox) (taken map[string]host.Member, kept map[string]string, err error) {
	if kept, err = r.renamedClaims(ctx, sb); err != nil {
		return nil, nil, err
	}
	taken, recs := map[string]host.Member{}, map[string]claim.Record{}
	for _, s := range sb.Spec.Services {
		// Note: a service that does not resolve is reported by the pass.
		svc, err := r.Class.Sandbox(ctx, sb, s, "")
		if err != nil || !r.mayClaim(serviceWork{sb: sb, svc: svc}) {
			continue
		}
		if _, ok := kept[svc.Engine.Name()]; ok || r.heldBeforeReserve(ctx, sb, svc) {
			continue
		}
		m, ok := r.Host.Warm().Take(sb.Namespace, host.ClassHash(svc.Container), poolNames(sb))
		if !ok {
			continue
		}
		taken[svc.Engine.Name()] = m
		recs[svc.Engine.Name()] = claim.Record{ID: m.ID, Credentials: host.CredentialsHash(m.Password)}
	}
	if len(taken) == 0 {
		return nil, kept, nil
	}
	var also map[string]any
	if bindingUnwritten(ctx) {
		also = map[string]any{"dockerHost": sb.Status.DockerHost}
	}
	if err := r.claims.Write(ctx, r.Client, sb, recs, also); err != nil {
		if also != nil {
			bindLater(ctx)
		}
		r.unreserve(ctx, taken)
		return nil, nil, fmt.Errorf("recording the claims of pool members: %w", err)
	}
	chaosplant.CrashAfter(chaosplant.AfterClaimRecorded)
	return taken, kept, nil
}

// renamedClaims are the own passwords, by engine, of the members this
// Sandbox's claim records name that already hold its services' names: a pass
// renamed them beside making the Secret, and stopped before the Secret was
// made. Each is proven by its record: of a pool of the namespace, and
// recorded with the hash of that own password (derived from the pool's key,
// as its pool derived it), which only a first Secret carries. A member
// recorded but not renamed is not kept: its password reached no Secret, so
// another is reserved in its place and it serves its pool again.
func (r *Reconciler) renamedClaims(ctx context.Context, sb *sandboxv1.Sandbox) (map[string]string, error) {
	kept := map[string]string{}
	for e, rec := range r.claims.Of(sb) {
		c, err := r.Driver.Inspect(ctx, rec.ID)
		if errors.Is(err, dd.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("inspecting the claimed member %s: %w", rec.ID, err)
		}
		if c.Name != serviceContainerName(sb, e) || c.Labels[host.LabelPoolUID] == "" || c.Labels[host.LabelNamespace] != sb.Namespace {
			continue
		}
		pw, err := r.PoolKeys.MemberPassword(ctx, sb.Namespace, c.Labels)
		if err == nil && host.CredentialsHash(pw) == rec.Credentials {
			kept[e] = pw
		}
	}
	return kept, nil
}

// unreserve removes reserved members no service claimed: each may be recorded
// and its password in the Secret, so it can serve no one else. A removal that
// fails is left to the pass that finds the member recorded and not renamed.
func (r *Reconciler) unreserve(ctx context.Context, ms map[string]host.Member) {
	for _, m := range ms {
		_ = r.Host.Remove(ctx, m.ID)
	}
}
