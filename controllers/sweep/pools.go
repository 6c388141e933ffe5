package sweep

import (
	"context"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// orphanPool is the kind of a pool member no live object owns.
const orphanPool = "pool"

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpools,verbs=get;list;watch

// planPools adds this instance's pool members that nothing live owns: an
// unclaimed member whose pool is gone, and a claimed one that no live Sandbox
// of its namespace records (status.claims, written before the rename), whoever
// else has its agentID: its data is never served to another. A claimed member
// is reaped once the grace period has passed since it was first seen
// unrecorded: a Sandbox whose status was lost, and whose Secret the member
// answers to, records it again meanwhile (see docs/pools.md). Members are
// listed before the objects, as in plan: a pool or a claim made after the list
// cannot be mistaken for gone.
func (r *Reconciler) planPools(ctx context.Context, p *sweepPlan, all []dd.ContainerSummary) error {
	var members []dd.ContainerSummary
	for _, c := range all {
		if c.Labels[host.LabelPoolUID] != "" && r.Options.Judges(c.Labels[host.LabelInstance]) {
			members = append(members, c)
		}
	}
	if len(members) == 0 {
		r.rememberUnowned(nil, p.now)
		return nil
	}
	pools, err := r.livePools(ctx)
	if err != nil {
		return err
	}
	var claimedOnes []dd.ContainerSummary
	for _, m := range members {
		switch {
		case host.IsMemberName(m.Name):
			if !pools[m.Labels[host.LabelPoolUID]] {
				p.consider(m, orphanPool, m.CreatedAt)
			}
		default:
			claimedOnes = append(claimedOnes, m)
		}
	}
	unowned, err := r.unowned(ctx, claimedOnes)
	if err != nil {
		return err
	}
	since := r.rememberUnowned(unowned, p.now)
	for _, m := range unowned {
		p.consider(m, orphanPool, since[m.ID])
	}
	return nil
}

// livePools lists, live from the API server, the UIDs of the pools that exist.
func (r *Reconciler) livePools(ctx context.Context) (map[string]bool, error) {
	pl := &metav1.PartialObjectMetadataList{}
	pl.SetGroupVersionKind(sandboxv1.GroupVersion.WithKind("SandboxPoolList"))
	if err := r.APIReader.List(ctx, pl); err != nil {
		return nil, err
	}
	pools := map[string]bool{}
	for _, item := range pl.Items {
		pools[string(item.UID)] = true
	}
	return pools, nil
}

// unowned are the claimed members no live Sandbox records: judged on the
// cache first (cheap, and a claim it shows is one), then, for those it shows
// unrecorded, on a live list of their namespace (the cache may lag behind a
// claim).
func (r *Reconciler) unowned(ctx context.Context, ms []dd.ContainerSummary) ([]dd.ContainerSummary, error) {
	if chaosplant.Active(chaosplant.SweepIgnoresClaims) {
		return ms, nil
	}
	byNamespace := map[string][]dd.ContainerSummary{}
	for _, m := range ms {
		byNamespace[m.Labels[host.LabelNamespace]] = append(byNamespace[m.Labels[host.LabelNamespace]], m)
	}
	var out []dd.ContainerSummary
	for ns, members := range byNamespace {
		for _, reader := range []client.Reader{r.Cache, r.APIReader} {
			var list sandboxv1.SandboxList
			if err := reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			if members = withoutRecord(members, list.Items); len(members) == 0 {
				break
			}
		}
		out = append(out, members...)
	}
	return out, nil
}

// withoutRecord keeps the members no Sandbox of sandboxes records.
func withoutRecord(members []dd.ContainerSummary, sandboxes []sandboxv1.Sandbox) []dd.ContainerSummary {
	recorded := map[string]bool{}
	for i := range sandboxes {
		for _, rec := range claim.Records(&sandboxes[i]) {
			recorded[rec.ID] = true
		}
	}
	var out []dd.ContainerSummary
	for _, m := range members {
		if !recorded[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

// rememberUnowned keeps when each claimed member of unowned was first seen
// unowned, and forgets the others; it returns those times by member ID.
// Note: in memory, as ownerMissing: a restart only lengthens the wait.
func (r *Reconciler) rememberUnowned(unowned []dd.ContainerSummary, now time.Time) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]time.Time, len(unowned))
	for _, m := range unowned {
		seen[m.ID] = now
		if at, ok := r.unownedSince[m.ID]; ok {
			seen[m.ID] = at
		}
	}
	r.unownedSince = seen
	return maps.Clone(seen)
}

// withLabels keeps the containers carrying every label of selector.
func withLabels(cs []dd.ContainerSummary, selector map[string]string) []dd.ContainerSummary {
	var out []dd.ContainerSummary
	for _, c := range cs {
		if hasLabels(c.Labels, selector) {
			out = append(out, c)
		}
	}
	return out
}

func hasLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
