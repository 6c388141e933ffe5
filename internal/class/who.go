package class

import (
	"context"
	"errors"
	"fmt"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// Sandbox is svc resolved for sb: its container named for sb's agent, labelled
// as sb's, known on its network by the service's names, and fingerprinted.
// An InitError comes with the service as it is without its scripts (see
// Service).
func (r *Resolver) Sandbox(ctx context.Context, sb *sandboxv1.Sandbox, svc sandboxv1.ServiceSpec, password string) (host.Service, error) {
	s, err := r.Service(ctx, sb.Namespace, sb.Spec.Network, svc, password)
	if err != nil && !errors.As(err, new(InitError)) {
		return s, err
	}
	c := &s.Container
	c.Name = engine.ContainerName(s.Engine, sb.Spec.AgentID)
	c.OwnerLabel = host.LabelUID
	c.Labels[host.LabelSandbox] = host.LabelSandboxTrue
	c.Labels[host.LabelOwner] = r.Options.OwnerName(sb)
	c.Labels[host.LabelNamespace] = sb.Namespace
	c.Labels[host.LabelName] = sb.Name
	c.Labels[host.LabelUID] = string(sb.UID)
	if s.Network != "" {
		c.Aliases = engine.ServiceNames(s.Engine, sb.Spec.AgentID)
	}
	c.Labels[host.LabelConfigHash] = host.Fingerprint(*c)
	return s, err
}

// Member is the class of pool's members, with password: the service resolved
// as a Sandbox's would be, labelled as the pool's (no name, no version or init
// label: LabelClass says it all), with no alias (DNS knows no member by a
// service's name). Its name and fingerprint are the member's own (made at
// create).
func (r *Resolver) Member(ctx context.Context, pool *sandboxv1.SandboxPool, password string) (host.Service, error) {
	s, err := r.Service(ctx, pool.Namespace, pool.Spec.Network, pool.Spec.Service, password)
	if err != nil {
		return s, err
	}
	if s.Engine.Rotate("c").Argv == nil {
		return s, fmt.Errorf("%s cannot be pooled: its password cannot be rotated at claim", s.Engine.Name())
	}
	// Note: a create retried after an unanswered one adopts its own member, by nonce.
	s.Container.OwnerLabel = host.LabelMember
	s.Container.Labels = map[string]string{
		host.LabelNamespace: pool.Namespace,
		host.LabelPool:      pool.Name,
		host.LabelPoolUID:   string(pool.UID),
		host.LabelEngine:    s.Engine.Name(),
		host.LabelInstance:  r.Options.Instance,
		host.LabelFeatures:  host.FeaturesLabel(s.Features),
		host.LabelClass:     host.ClassHash(s.Container),
	}
	s.Container.Labels[host.LabelCredentials] = host.CredentialsHash(password)
	return s, nil
}
