package sandbox

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// failureReasons outrank progress reasons when services disagree.
var failureReasons = map[string]bool{
	sandboxv1.ReasonPullFailed: true, sandboxv1.ReasonNameConflict: true, sandboxv1.ReasonExited: true,
	sandboxv1.ReasonProbeTimeout: true, sandboxv1.ReasonFeatureVerifyFailed: true,
	sandboxv1.ReasonDockerUnavailable: true, sandboxv1.ReasonInvalidSpec: true, sandboxv1.ReasonPaused: true,
	sandboxv1.ReasonDockerError: true,
}

// stallAll marks the whole Sandbox stalled for a reason that is not any one service's
// (an invalid spec, a foreign Secret in the way).
func stallAll(sb *sandboxv1.Sandbox, reason, message string) {
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonFailed, message)
	kit.SetCondition(sb, sandboxv1.ConditionStalled, metav1.ConditionTrue, reason, message)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionReconciling)
}

// dockerDown marks the Sandbox as unverifiable while Docker does not answer.
func dockerDown(sb *sandboxv1.Sandbox, err error, retryIn time.Duration) {
	sb.Status.ObservedGeneration = sb.Generation
	msg := fmt.Sprintf("Docker does not answer: %v; retrying in %s", err, retryIn.Round(time.Second))
	kit.SetCondition(sb, sandboxv1.ConditionContainersRunning, metav1.ConditionUnknown, sandboxv1.ReasonDockerUnavailable, msg)
	kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonDockerUnavailable, msg)
	kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, sandboxv1.ReasonDockerUnavailable, "retrying: "+msg)
	meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
}

// writeStatus writes sb's status as a merge patch from before, conditional on
// what the pass knows the server holds (patchStatus), and remembers sb as the
// API server returned it.
//
// Note: only what a write returned is remembered, never a pass's Sandbox at
// its end: after a write that failed it holds what the server does not (with
// the resourceVersion of an earlier write that succeeded, its finalizer's), and
// the next pass, handed it for a cache that lagged, patched from it and sent
// none of that (a Sandbox Ready whose status never named its Docker host).
func (r *Reconciler) writeStatus(ctx context.Context, before, sb *sandboxv1.Sandbox) error {
	from := sb.ResourceVersion
	if err := r.patchStatus(ctx, before, sb); err != nil {
		return err
	}
	kit.NoteWrite(ctx, sb)
	r.recalls.wrote(from, sb)
	return nil
}
