package sweep

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// orphanPool is the kind of a pool member no live object owns.
const orphanPool = "pool"

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpools,verbs=get;list;watch

// planPools adds this instance's pool members that nothing live owns: an
// unclaimed member whose pool is gone, a claimed one that no live Sandbox of its
// namespace has recorded, nor names as its service's container (one whose record
// was lost finds it again). Members are listed before the objects, as in plan: a
// pool or a claim made after the list cannot be mistaken for gone.
func (r *Reconciler) planPools(ctx context.Context, p *sweepPlan, all []dd.ContainerSummary) error {
	var members []dd.ContainerSummary
	for _, c := range all {
		if c.Labels[host.LabelPoolUID] != "" && r.Options.Judges(c.Labels[host.LabelInstance]) {
			members = append(members, c)
		}
	}
	if len(members) == 0 {
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
	for _, m := range unowned {
		p.consider(m, orphanPool, m.CreatedAt)
	}
	return err
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

// unowned are the claimed members no Sandbox of their namespace owns: judged on
// the cache first (cheap, and a claim it shows is one), then, for those it shows
// unowned, on a live list of their namespace (the cache may lag behind a claim).
func (r *Reconciler) unowned(ctx context.Context, ms []dd.ContainerSummary) ([]dd.ContainerSummary, error) {
	byNamespace := map[string][]dd.ContainerSummary{}
	for _, m := range ms {
		byNamespace[m.Labels[host.LabelNamespace]] = append(byNamespace[m.Labels[host.LabelNamespace]], m)
	}
	var out []dd.ContainerSummary
	for ns, members := range byNamespace {
		for _, reader := range []client.Reader{r.Cache, r.APIReader} {
			var list sandboxv1.SandboxList
			if err := reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return out, err
			}
			if members = withoutOwner(members, list.Items); len(members) == 0 {
				break
			}
		}
		out = append(out, members...)
	}
	return out, nil
}

// withoutOwner keeps the members no Sandbox of sandboxes records, nor names as
// its service's container.
func withoutOwner(members []dd.ContainerSummary, sandboxes []sandboxv1.Sandbox) []dd.ContainerSummary {
	if chaosplant.Active(chaosplant.SweepIgnoresClaims) {
		return members
	}
	recorded, named := map[string]bool{}, map[string]bool{}
	for i := range sandboxes {
		sb := &sandboxes[i]
		for _, rec := range claim.Records(sb) {
			recorded[rec.ID] = true
		}
		for _, svc := range sb.Spec.Services {
			if e, ok := engine.Lookup(string(svc.Engine)); ok {
				named[engine.ContainerName(e, sb.Spec.AgentID)] = true
			}
		}
	}
	var out []dd.ContainerSummary
	for _, m := range members {
		if !recorded[m.ID] && !named[m.Name] {
			out = append(out, m)
		}
	}
	return out
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
