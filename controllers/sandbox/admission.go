package sandbox

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/admission"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=dockerhosts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas/status,verbs=get;update;patch

// quotaRecheck is how often a Sandbox waiting for quota looks again besides on
// its quotas' changes (a freed entry re-queues the next in line at once).
const quotaRecheck = admission.QuotaRecheck

// verdict is what admission said of a pass: go on (why ""), or refused, with
// its reason (PolicyViolation, Unschedulable, QuotaExceeded) and words; retry:
// look again soon (a conflict), nothing judged.
type verdict struct {
	admission.Verdict
	result      ctrl.Result
	reason, why string
	retry       bool
}

// held: sb made something, and what its spec asks beyond what it was admitted
// to was refused: what runs stays as it is (heldAsTheyRun).
func (v verdict) held(*sandboxv1.Sandbox, *Reconciler) bool {
	return v.why != "" && !v.Waiting
}

// admission judges what sb's spec asks against its namespace's policies (until
// it made something: spec.dockerHost, set by the author, skips placement, which
// enforces them), its Docker host and its namespace's SandboxQuotas, on every
// pass, before anything of it is made or grown: only what takes more than it
// was admitted to (status.admitted) is judged, so the common pass reads
// nothing. What passes is recorded in sb.Status.Admitted (written with the
// pass's status, no write of its own).
func (r *Reconciler) admission(ctx context.Context, sb *sandboxv1.Sandbox) (verdict, error) {
	g := admission.Gate{Client: r.Client, API: r.APIReader, Options: r.Options, Host: r.Scope.Name}
	req := admission.ForSandbox(r.Options, sb).KeepingRecord()
	if chaosplant.Active(chaosplant.ShrinkAtOnce) {
		req = admission.ForSandbox(r.Options, sb)
	}
	if chaosplant.Active(chaosplant.GrowthUnjudged) && sb.Status.Admitted != nil {
		sb.Status.Admitted = quota.OfSandbox(r.Options, sb).Admitted()
		return verdict{}, nil
	}
	v, err := g.Admit(ctx, req)
	if v.Admitted != nil {
		sb.Status.Admitted = v.Admitted
	}
	return verdict{Verdict: v, result: ctrl.Result{RequeueAfter: v.Recheck()}, reason: v.Reason(), why: v.Why(), retry: v.Retry}, err
}

// shrinkRecheck is how soon a pass looks again at a shrink not yet given
// back (a replacement in flight, or a write that failed).
const shrinkRecheck = 2 * time.Second

// settleShrink gives back what sb's record holds beyond what its spec asks,
// once what runs matches the spec (matches: nothing held, nothing dropped
// still there, every container made to the spec). Until then a shrink stays
// counted at what was admitted (admission keeps the record), so nothing else
// is admitted into room that what still runs takes. It says when to look
// again: soon when what runs moves to the spec by itself (a replacement in
// flight), else 0: no shrink waits, or what it waits on (a refused growth, a
// removal's retry, scripts that cannot be read) wakes the Sandbox anyway.
func (r *Reconciler) settleShrink(ctx context.Context, sb *sandboxv1.Sandbox, matches, moving bool) time.Duration {
	rec, want := quota.FromAdmitted(sb.Status.Admitted), quota.OfSandbox(r.Options, sb)
	switch {
	case rec == nil || rec.Equal(want) || !rec.Covers(want):
		return 0
	case !matches && moving:
		return kit.Jitter(shrinkRecheck)
	case !matches:
		return 0
	}
	g := admission.Gate{Client: r.Client, API: r.APIReader, Options: r.Options, Host: r.Scope.Name}
	v, err := g.Admit(ctx, admission.ForSandbox(r.Options, sb))
	if err != nil || v.Retry || v.Admitted == nil {
		if err != nil {
			logf.FromContext(ctx).Error(err, "Giving back what a shrink freed; retrying")
		}
		return kit.Jitter(shrinkRecheck)
	}
	sb.Status.Admitted = v.Admitted
	return 0
}

// wait says sb waits to be admitted (it made nothing yet): for its namespace's
// policy, Stalled; for its host, as Unschedulable; or for room, as QuotaExceeded.
func (v verdict) wait(sb *sandboxv1.Sandbox) {
	if v.reason == sandboxv1.ReasonPolicyViolation {
		stallAll(sb, v.reason, v.why)
		return
	}
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
