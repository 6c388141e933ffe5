package sandbox

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// quotaRecheck is how often a Sandbox waiting for quota looks again besides on
// its quotas' changes (a freed entry re-queues it at once).
const quotaRecheck = kit.StalledRecheck

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas/status,verbs=get;update;patch

// admit holds sb's room under its namespace's SandboxQuotas before anything of
// it is made (its Secret, a container, a claim); ok is false while it waits.
// A Sandbox that already made something is admitted whatever the quota says.
func (r *Reconciler) admit(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, bool, error) {
	req := quota.Request{Namespace: sb.Namespace, Name: sb.Name, Kind: "Sandbox", UID: sb.UID,
		Unit: quota.Amounts{Sandboxes: 1, Memory: capacity.OfSandbox(r.Options, sb).Memory}, Count: 1}
	if madeAnything(sb) {
		req.Min = 1
	}
	v, err := quota.Admit(ctx, r.Client, r.APIReader, req)
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: kit.ConflictRetry}, false, nil
	case err != nil:
		return ctrl.Result{}, false, err
	case v.Admitted == 1:
		return ctrl.Result{}, true, nil
	}
	quotaExceeded(sb, v.Why)
	return ctrl.Result{RequeueAfter: kit.Jitter(quotaRecheck)}, false, nil
}

// madeAnything: a container or a claimed member of sb is recorded.
func madeAnything(sb *sandboxv1.Sandbox) bool {
	for _, s := range sb.Status.Services {
		if s.ContainerID != "" {
			return true
		}
	}
	return len(sb.Status.Claims) > 0
}

// quotaExceeded says sb waits for room, as Unschedulable says it waits for a host.
func quotaExceeded(sb *sandboxv1.Sandbox, why string) {
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonQuotaExceeded, why)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, sandboxv1.ReasonQuotaExceeded, "waiting for quota: "+why)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
}

// waitingForQuota maps a SandboxQuota's change to the Sandboxes of its
// namespace on this host that wait for room.
func (r *Reconciler) waitingForQuota(ctx context.Context, q client.Object) []reconcile.Request {
	var list sandboxv1.SandboxList
	if err := r.List(ctx, &list, client.InNamespace(q.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, sb := range list.Items {
		c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady)
		if sb.Spec.DockerHost == r.Scope.Name && c != nil && c.Reason == sandboxv1.ReasonQuotaExceeded {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sb)})
		}
	}
	return out
}
