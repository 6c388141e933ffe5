package sandboxpool

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/policy"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// allowedHere says why the namespace's SandboxPolicies refuse the pool's host
// ("" when they allow it), and then makes no member (ms.missing 0): a pool
// pinned by spec.dockerHost skips placement, which enforces them. Members that
// run stay.
func (p *Reconciler) allowedHere(ctx context.Context, pool *sandboxv1.SandboxPool, ms *poolMembers) (string, error) {
	why, err := policy.HostRefusal(ctx, p.Client, pool.Namespace, p.Scope.Name)
	if why != "" {
		ms.missing = 0
		why = "spec.dockerHost " + p.Scope.Name + ": " + why
	}
	return why, err
}

// poolPolicyViolation: the pool's host is not one its namespace may use.
func poolPolicyViolation(pool *sandboxv1.SandboxPool, why string) {
	kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonPolicyViolation, why)
	kit.SetCondition(pool, sandboxv1.ConditionStalled, metav1.ConditionTrue, sandboxv1.ReasonPolicyViolation, why)
}

// stalledByPolicy maps a SandboxPolicy's change (or this host's labels) to the
// pools on this host it stalled.
func (p *Reconciler) stalledByPolicy(ctx context.Context, _ client.Object) []reconcile.Request {
	return p.onHostWith(ctx, "", sandboxv1.ConditionStalled, sandboxv1.ReasonPolicyViolation)
}

// onHostWith lists the pools of namespace ("": all) on this host whose
// condition condType has reason (from the cache).
func (p *Reconciler) onHostWith(ctx context.Context, namespace, condType, reason string) []reconcile.Request {
	var list sandboxv1.SandboxPoolList
	if err := p.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{index.DockerHost: p.Scope.Name}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, pool := range list.Items {
		c := meta.FindStatusCondition(pool.Status.Conditions, condType)
		if pool.Spec.DockerHost == p.Scope.Name && c != nil && c.Reason == reason {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pool)})
		}
	}
	return out
}
