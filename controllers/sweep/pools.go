package sweep

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// orphanPool is the kind of a pool member no live object owns.
const orphanPool = "pool"

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpools,verbs=get;list;watch

// planPools adds this instance's pool members that nothing live owns: an
// unclaimed member whose pool is gone, a claimed one that no live Sandbox's
// claim record names (see claims.go). Members are listed before the objects, as
// in plan: a pool or a claim made after the list cannot be mistaken for gone
// (all is that list).
func (r *Reconciler) planPools(ctx context.Context, p *sweepPlan, all []dd.ContainerSummary) error {
	var members []dd.ContainerSummary
	for _, c := range all {
		if c.Labels[host.LabelPoolUID] != "" && c.Labels[host.LabelInstance] == r.Options.Instance {
			members = append(members, c)
		}
	}
	if len(members) == 0 {
		return nil
	}
	pools, claimed, err := r.poolOwners(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		if host.IsMemberName(m.Name) && !pools[m.Labels[host.LabelPoolUID]] || !host.IsMemberName(m.Name) && !claimed[m.ID] {
			p.consider(m, orphanPool, m.CreatedAt)
		}
	}
	return nil
}

// poolOwners lists, live from the API server, the UIDs of the pools that exist
// and the member IDs the Sandboxes' claim records name.
func (r *Reconciler) poolOwners(ctx context.Context) (pools, claimed map[string]bool, err error) {
	pl := &metav1.PartialObjectMetadataList{}
	pl.SetGroupVersionKind(sandboxv1.GroupVersion.WithKind("SandboxPoolList"))
	if err := r.APIReader.List(ctx, pl); err != nil {
		return nil, nil, err
	}
	pools = map[string]bool{}
	for _, item := range pl.Items {
		pools[string(item.UID)] = true
	}
	sl := &metav1.PartialObjectMetadataList{}
	sl.SetGroupVersionKind(sandboxv1.GroupVersion.WithKind("SandboxList"))
	if err := r.APIReader.List(ctx, sl); err != nil {
		return nil, nil, err
	}
	claimed = map[string]bool{}
	for _, item := range sl.Items {
		for _, rec := range claim.RecordsIn(item.Annotations) {
			claimed[rec.ID] = true
		}
	}
	return pools, claimed, nil
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
