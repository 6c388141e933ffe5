package sandbox

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// ours lists the Sandbox's containers: those carrying its UID, and the pool
// members its claim records (status.claims) name that are proven its own:
// labelled by a pool of its namespace, and named as a member not yet claimed,
// as the Sandbox's service, or as set aside by it (never another Sandbox's).
// For a service of specs with neither (no record, or one naming a member that
// is gone), a claim lost with the status is looked for (recover) on creds'
// proof. The services with a member reserved this pass have neither.
func (r *Reconciler) ours(ctx context.Context, sb *sandboxv1.Sandbox, specs []host.Service, creds *credentials) ([]dd.ContainerSummary, map[string]claim.Record, error) {
	cs, err := r.Driver.List(ctx, uidSelector(sb))
	if err != nil {
		return nil, nil, err
	}
	var reserved map[string]host.Member
	if creds != nil {
		reserved = creds.reserved
	}
	claims := r.claims.Of(sb)
	// Note: a member reserved this pass is claimed by its service, not observed.
	maps.DeleteFunc(claims, func(e string, _ claim.Record) bool { _, ok := reserved[e]; return ok })
	specs = slices.DeleteFunc(slices.Clone(specs), func(s host.Service) bool { _, ok := reserved[s.Engine.Name()]; return ok })
	lost := unrecorded(specs, cs, claims)
	if len(claims) == 0 && len(lost) == 0 {
		return cs, claims, nil
	}
	// Note: of any instance: a member this Sandbox's status records is its own
	// whatever instance made it (the record is this API server's).
	members, err := r.Driver.List(ctx, map[string]string{host.LabelNamespace: sb.Namespace})
	if err != nil {
		return nil, nil, err
	}
	r.recover(ctx, sb, provable(unserved(specs, cs, members, claims), creds), members, claims)
	for _, m := range members {
		e := m.Labels[host.LabelEngine]
		name := serviceContainerName(sb, e)
		if m.Labels[host.LabelPoolUID] != "" && claims[e].ID == m.ID &&
			(host.IsMemberName(m.Name) || m.Name == name || host.IsAside(m.Name, name)) {
			cs = append(cs, m)
		}
	}
	return cs, claims, nil
}

// unrecorded are the services of specs with no claim record and no container of
// the Sandbox's UID: the ones whose claim may have been lost.
func unrecorded(specs []host.Service, cs []dd.ContainerSummary, claims map[string]claim.Record) []host.Service {
	var out []host.Service
	for _, s := range specs {
		e := s.Engine.Name()
		_, recorded := claims[e]
		if !recorded && !slices.ContainsFunc(cs, func(c dd.ContainerSummary) bool { return c.Labels[host.LabelEngine] == e }) {
			out = append(out, s)
		}
	}
	return out
}

// unserved are the services of specs with no container of the Sandbox's UID
// and no member its claim records among members: the ones whose claim may have
// been lost (its record lost with the status, or replaced by a claim that met
// the member holding the service's name).
func unserved(specs []host.Service, cs, members []dd.ContainerSummary, claims map[string]claim.Record) []host.Service {
	var out []host.Service
	for _, s := range unrecorded(specs, cs, nil) {
		rec, recorded := claims[s.Engine.Name()]
		if !recorded || !slices.ContainsFunc(members, func(m dd.ContainerSummary) bool { return m.ID == rec.ID }) {
			out = append(out, s)
		}
	}
	return out
}

// provable keeps the services of specs whose password creds read from the
// Sandbox's own Secret: the only proof a lost claim is recovered on.
func provable(specs []host.Service, creds *credentials) []host.Service {
	if creds == nil {
		return nil
	}
	return slices.DeleteFunc(specs, func(s host.Service) bool { return !creds.inSecret[s.Engine.Name()] })
}

// recover finds the claims lost with the status (restored, or rewritten): the
// pool member named as the service's container, labelled by a pool of the
// Sandbox's namespace and an instance this manager judges, that this Sandbox
// claimed (provenLost). Such a claim is recorded again; nothing else is taken
// for the Sandbox's, and never another Sandbox's member, whatever its agentID.
func (r *Reconciler) recover(ctx context.Context, sb *sandboxv1.Sandbox, lost []host.Service, members []dd.ContainerSummary, claims map[string]claim.Record) {
	for _, s := range lost {
		e := s.Engine.Name()
		i := slices.IndexFunc(members, func(m dd.ContainerSummary) bool {
			return m.Name == s.Container.Name && m.Labels[host.LabelPoolUID] != "" && m.Labels[host.LabelEngine] == e &&
				r.Options.Judges(m.Labels[host.LabelInstance])
		})
		if i < 0 {
			continue
		}
		c, err := r.Driver.Inspect(ctx, members[i].ID)
		if err != nil {
			continue
		}
		if !r.provenLost(ctx, s, c) {
			continue
		}
		rec := claim.Record{ID: c.ID, Credentials: host.CredentialsHash(s.Password)}
		if err := r.claims.Write(ctx, r.Client, sb, map[string]claim.Record{e: rec}, nil); err != nil {
			logf.FromContext(ctx).Error(err, "Recording a recovered claim", "engine", e, "container", c.Name)
			continue
		}
		claims[e] = rec
		r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventClaimRecovered, sandboxv1.ActionReconcile,
			"%s: the claim of pool member %s, lost with the status, was found again (it answers to the password of the Sandbox's Secret)", e, c.Name)
	}
}

// provenLost says whether c, named as s's container, is the Sandbox's own
// claim: it answers to s's password, read from the Sandbox's own Secret
// (controlled by its UID: another UID's is a SecretConflict), which only a
// claim by this Sandbox gave it (a rotation, or a reservation the Secret was
// made with). Never on what the manager derives for any Sandbox of this
// agentID (the name, a member's own password): a claim cut short before its
// rotation is this Sandbox's by its record only, and, that lost too, a
// leftover the sweep reaps.
func (r *Reconciler) provenLost(ctx context.Context, s host.Service, c dd.Container) bool {
	return r.Host.Probe(ctx, s, c, host.Address(c, s.Network)).Passed
}

// dropLegacyClaims removes the claim annotations of releases before
// status.claims: never read as a proof (any editor of the Sandbox writes
// them), and reported when one names another container than the Sandbox's
// records (after ours: a live claim of an earlier release is found again).
func (r *Reconciler) dropLegacyClaims(ctx context.Context, sb *sandboxv1.Sandbox, records map[string]claim.Record) error {
	legacy := claim.Legacy(sb.Annotations)
	if len(legacy) == 0 {
		return nil
	}
	engines := slices.Sorted(maps.Keys(legacy))
	for _, e := range engines {
		if rec, ok := records[e]; !ok || rec.ID != legacy[e].ID {
			r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.EventClaimRecordIgnored, sandboxv1.ActionReconcile,
				"annotation %s%s names container %q, which this Sandbox did not claim: ignored and removed (claims are recorded in status.claims)",
				sandboxv1.AnnotationClaimPrefix, e, legacy[e].ID)
		}
	}
	return claim.RemoveLegacy(ctx, r.Client, sb, engines)
}

// serviceContainerName is the container name of sb's service of engine name.
func serviceContainerName(sb *sandboxv1.Sandbox, name string) string {
	e, ok := engine.Lookup(name)
	if !ok {
		return ""
	}
	return engine.ContainerName(e, sb.Spec.AgentID)
}

// uidSelector selects the containers of one Sandbox.
func uidSelector(sb *sandboxv1.Sandbox) map[string]string {
	return map[string]string{host.LabelUID: string(sb.UID)}
}
