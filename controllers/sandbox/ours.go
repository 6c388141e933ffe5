package sandbox

import (
	"context"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// ours lists the Sandbox's containers: those carrying its UID, and the pool
// members its claim records name that are proven its own: labelled by a pool of
// its namespace and this instance, and named as a member not yet claimed, as
// the Sandbox's service, or as set aside by it (never another Sandbox's).
func (r *Reconciler) ours(ctx context.Context, sb *sandboxv1.Sandbox) ([]dd.ContainerSummary, map[string]claim.Record, error) {
	cs, err := r.Driver.List(ctx, uidSelector(sb))
	if err != nil {
		return nil, nil, err
	}
	claims := r.claims.Of(sb)
	if len(claims) == 0 {
		return cs, claims, nil
	}
	ids := map[string]bool{}
	for _, c := range claims {
		ids[c.ID] = true
	}
	members, err := r.Driver.List(ctx, map[string]string{host.LabelNamespace: sb.Namespace, host.LabelInstance: r.Options.Instance})
	if err != nil {
		return nil, nil, err
	}
	for _, m := range members {
		e := m.Labels[host.LabelEngine]
		name := serviceContainerName(sb, e)
		if ids[m.ID] && m.Labels[host.LabelPoolUID] != "" && claims[e].ID == m.ID &&
			(host.IsMemberName(m.Name) || m.Name == name || host.IsAside(m.Name, name)) {
			cs = append(cs, m)
		}
	}
	return cs, claims, nil
}

// serviceContainerName is the container name of sb's service of engine name.
func serviceContainerName(sb *sandboxv1.Sandbox, name string) string {
	e, ok := engine.Lookup(name)
	if !ok {
		return ""
	}
	return engine.ContainerName(e, sb.Spec.AgentID)
}
