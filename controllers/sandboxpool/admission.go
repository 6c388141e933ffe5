package sandboxpool

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/admission"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// admit passes the pool through its gates (internal/admission): its
// namespace's SandboxPolicies (a pool pinned by spec.dockerHost skips
// placement, which enforces them), its host's cordon, capacity and deletion,
// and its namespace's SandboxQuotas. A pool with no member here is admitted
// whole or waits; one with members keeps them, serving claims, whatever the
// gates say, and makes new ones only as far as they admit: ms.missing is
// lowered to that, and what was admitted recorded in its status. A pool kept
// from making members holds room only for those it has: what it cannot make
// is not kept from others.
func (p *Reconciler) admit(ctx context.Context, pool *sandboxv1.SandboxPool, ms *poolMembers) (admission.Verdict, error) {
	// Note: a create in flight is a member: not counted, the gates' room
	// would be made twice over.
	have := len(ms.ready) + len(ms.starting) + ms.creating
	if chaosplant.Active(chaosplant.CreatesUncounted) {
		have -= ms.creating
	}
	g := admission.Gate{Client: p.Client, API: p.API, Options: p.Options, Host: p.Scope.Name}
	v, err := g.Admit(ctx, admission.ForPool(p.Options, pool, have, have+len(ms.unwanted)))
	if err != nil {
		return v, err
	}
	ms.missing = min(ms.missing, max(0, int(v.Units)-have))
	if v.Retry {
		ms.missing = 0 // looked at again soon (the caller re-queues a pass that made none)
	}
	if v.Admitted != nil {
		pool.Status.Admitted = v.Admitted
	}
	return v, nil
}

// say puts the verdict in the pool's conditions: what its host, its quotas
// and its namespace's policies refuse, the last said first in Ready.
func say(pool *sandboxv1.SandboxPool, v admission.Verdict) {
	switch {
	case v.Host != "" && v.Waiting:
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonUnschedulable, v.Host)
	case v.Host != "" && pool.Status.ReadyReplicas < ptrOr(pool.Spec.Replicas, 1):
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonCordoned,
			v.Host+": its members serve claims; no member beyond what it was admitted to is made")
	}
	if v.Quota != "" {
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonQuotaExceeded, v.Quota)
	}
	if v.Policy != "" {
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonPolicyViolation, v.Policy)
		kit.SetCondition(pool, sandboxv1.ConditionStalled, metav1.ConditionTrue, sandboxv1.ReasonPolicyViolation, v.Policy)
	}
}
