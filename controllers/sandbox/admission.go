package sandbox

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// verdict is what admission said of a pass: go on (why ""), or refused, with
// its reason (Unschedulable, QuotaExceeded) and words; retry: look again soon
// (a conflict), nothing judged.
type verdict struct {
	result      ctrl.Result
	reason, why string
	retry       bool
}

// held: sb made something, and what its spec asks beyond what it was admitted
// to was refused: what runs stays as it is (holding).
func (v verdict) held(sb *sandboxv1.Sandbox, r *Reconciler) bool {
	return v.why != "" && quota.RecordedSandbox(r.Options, sb) != nil
}

// admission judges what sb's spec asks against its Docker host and its
// namespace's SandboxQuotas, on every pass, before anything of it is made or
// grown: only what takes more than it was admitted to (status.admitted) is
// judged, so the common pass reads nothing. What passes is recorded in
// sb.Status.Admitted (written with the pass's status, no write of its own).
func (r *Reconciler) admission(ctx context.Context, sb *sandboxv1.Sandbox) (verdict, error) {
	need, recorded := quota.OfSandbox(r.Options, sb), quota.RecordedSandbox(r.Options, sb)
	if recorded != nil && sb.Status.Admitted == nil {
		sb.Status.Admitted = recorded.Admitted() // made by an earlier release: counted at its demand
	}
	v, err := r.admittedOnHost(ctx, sb, need, recorded)
	if err != nil || v.retry || v.why != "" {
		return v, err
	}
	if v, err = r.admit(ctx, sb, need, recorded); err != nil || v.retry || v.why != "" {
		return v, err
	}
	sb.Status.Admitted = need.Admitted()
	return verdict{}, nil
}

// admittedOnHost holds sb to its host's cordon, capacity and deletion for what
// it asks beyond what it was admitted to. Placement checks them for the
// Sandboxes it places; spec.dockerHost, set by the author, skips placement
// (unlike a pod's spec.nodeName, which skips every check the scheduler makes).
// What already runs stays: a cordon or a deletion evicts nothing.
func (r *Reconciler) admittedOnHost(ctx context.Context, sb *sandboxv1.Sandbox, need quota.Amounts, recorded *quota.Amounts) (verdict, error) {
	a := capacity.Admission{Client: r.Client, API: r.APIReader, Cache: r.Client, Options: r.Options}
	req := capacity.Request{Key: sb.Namespace + "/" + sb.Name, UID: string(sb.UID), Need: hostDemand(need)}
	if recorded != nil {
		d := hostDemand(*recorded)
		req.Admitted = &d
	}
	why, err := a.Admit(ctx, r.Scope.Name, req, sb.Status.Conditions)
	switch {
	case apierrors.IsConflict(err):
		return verdict{retry: true, result: ctrl.Result{RequeueAfter: kit.ConflictRetry}}, nil
	case err != nil:
		return verdict{}, err
	case why == "":
		return verdict{}, nil
	}
	return verdict{reason: sandboxv1.ReasonUnschedulable, why: why, result: ctrl.Result{RequeueAfter: kit.Jitter(hostRecheck)}}, nil
}

// hostDemand is what amounts take of a host.
func hostDemand(a quota.Amounts) capacity.Demand {
	return capacity.OfAdmitted(a.Admitted())
}

// admit holds sb's room under its namespace's SandboxQuotas for what it asks
// beyond what it was admitted to.
func (r *Reconciler) admit(ctx context.Context, sb *sandboxv1.Sandbox, need quota.Amounts, recorded *quota.Amounts) (verdict, error) {
	v, err := quota.Admit(ctx, r.Client, r.APIReader, quota.Request{Namespace: sb.Namespace, Name: sb.Name, Kind: "Sandbox",
		UID: sb.UID, Unit: need, Count: 1, Recorded: recorded, Hold: true})
	switch {
	case apierrors.IsConflict(err):
		return verdict{retry: true, result: ctrl.Result{RequeueAfter: kit.ConflictRetry}}, nil
	case err != nil:
		return verdict{}, err
	case v.Admitted == 1:
		return verdict{}, nil
	}
	return verdict{reason: sandboxv1.ReasonQuotaExceeded, why: v.Why, result: ctrl.Result{RequeueAfter: kit.Jitter(quotaRecheck)}}, nil
}

// wait says sb waits to be admitted (it made nothing yet): for its host, as
// Unschedulable, or for room, as QuotaExceeded.
func (v verdict) wait(sb *sandboxv1.Sandbox) {
	sb.Status.ObservedGeneration = sb.Generation
	waitingFor := map[string]string{sandboxv1.ReasonUnschedulable: "waiting for its Docker host: ", sandboxv1.ReasonQuotaExceeded: "waiting for quota: "}
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, v.reason, v.why)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, v.reason, waitingFor[v.reason]+v.why)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
}

// hold says sb's services run as they were admitted, not as its spec now asks:
// UpToDate False and Reconciling True with the refusal's reason, until room frees.
func (v verdict) hold(sb *sandboxv1.Sandbox) {
	msg := "the spec's change is not applied, what runs stays as it is: " + v.why
	kit.SetCondition(sb, sandboxv1.ConditionUpToDate, metav1.ConditionFalse, v.reason, msg)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, v.reason, msg)
}
