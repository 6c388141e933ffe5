package sandbox

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/policy"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// allowedHere checks, before anything of sb is made, that its namespace's
// SandboxPolicies allow this Docker host: placement only places where they
// do, but spec.dockerHost, set by the author, skips placement. A Sandbox that
// already made something stays (a policy changed later evicts nothing).
func (r *Reconciler) allowedHere(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, bool, error) {
	if quota.MadeAnything(sb) {
		return ctrl.Result{}, true, nil
	}
	why, err := policy.HostRefusal(ctx, r.Client, sb.Namespace, r.Scope.Name)
	if err != nil || why == "" {
		return ctrl.Result{}, err == nil, err
	}
	stallAll(sb, sandboxv1.ReasonPolicyViolation, "spec.dockerHost "+r.Scope.Name+": "+why)
	return ctrl.Result{RequeueAfter: kit.Jitter(kit.StalledRecheck)}, false, nil
}

// stalledByPolicy maps a SandboxPolicy's change (or this host's labels) to
// the Sandboxes on this host that it stalled.
func (r *Reconciler) stalledByPolicy(ctx context.Context, _ client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, sb := range r.onHostWith(ctx, "", sandboxv1.ConditionStalled, sandboxv1.ReasonPolicyViolation) {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sb)})
	}
	return out
}

// onHostWith lists the Sandboxes of namespace ("": all) on this host whose
// condition condType has reason (from the cache).
func (r *Reconciler) onHostWith(ctx context.Context, namespace, condType, reason string) []sandboxv1.Sandbox {
	var list sandboxv1.SandboxList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{index.DockerHost: r.Scope.Name}); err != nil {
		return nil
	}
	var out []sandboxv1.Sandbox
	for _, sb := range list.Items {
		c := meta.FindStatusCondition(sb.Status.Conditions, condType)
		if sb.Spec.DockerHost == r.Scope.Name && c != nil && c.Reason == reason {
			out = append(out, sb)
		}
	}
	return out
}
