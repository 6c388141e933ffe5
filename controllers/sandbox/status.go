package sandbox

import (
	"fmt"
	"strings"
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

// merge folds the services' parts into one condition: True when all are ok, else the
// most serious reason and every service's message.
func merge(sb *sandboxv1.Sandbox, condType, okReason string, results []serviceResult, pick func(serviceResult) part) {
	var reason string
	var messages []string
	for _, res := range results {
		p := pick(res)
		if p.ok {
			continue
		}
		if reason == "" || failureReasons[p.reason] && !failureReasons[reason] {
			reason = p.reason
		}
		messages = append(messages, fmt.Sprintf("%s: %s", res.status.Engine, p.message))
	}
	if reason == "" {
		kit.SetCondition(sb, condType, metav1.ConditionTrue, okReason, fmt.Sprintf("all %d services", len(results)))
		return
	}
	kit.SetCondition(sb, condType, metav1.ConditionFalse, reason, strings.Join(messages, "; "))
}

// summarize writes the services' results into status and derives every condition.
func summarize(sb *sandboxv1.Sandbox, results []serviceResult) {
	sb.Status.ObservedGeneration = sb.Generation
	sb.Status.SecretName = sandboxv1.SecretName(sb)
	sb.Status.Services = make([]sandboxv1.ServiceStatus, len(results))
	engines := make([]string, len(results))
	for i, res := range results {
		sb.Status.Services[i] = res.status
		engines[i] = string(res.status.Engine)
	}
	sb.Status.Engines = strings.Join(engines, ",")

	merge(sb, sandboxv1.ConditionImagesReady, sandboxv1.ReasonPresent, results, func(r serviceResult) part { return r.images })
	merge(sb, sandboxv1.ConditionContainersRunning, sandboxv1.ReasonRunning, results, func(r serviceResult) part { return r.containers })
	merge(sb, sandboxv1.ConditionServicesReady, sandboxv1.ReasonReady, results, func(r serviceResult) part { return r.probes })
	merge(sb, sandboxv1.ConditionUpToDate, sandboxv1.ReasonUpToDate, results, func(r serviceResult) part { return r.upToDate })

	stalled := false
	for _, res := range results {
		stalled = stalled || res.stalled
	}
	summarizeReady(sb, stalled)
}

// summarizeReady derives Ready, Reconciling and Stalled from the other conditions.
func summarizeReady(sb *sandboxv1.Sandbox, stalled bool) {
	var blocking *metav1.Condition
	for _, t := range []string{sandboxv1.ConditionImagesReady, sandboxv1.ConditionContainersRunning, sandboxv1.ConditionServicesReady} {
		c := meta.FindStatusCondition(sb.Status.Conditions, t)
		if c == nil || c.Status == metav1.ConditionTrue {
			continue
		}
		if blocking == nil || failureReasons[c.Reason] && !failureReasons[blocking.Reason] {
			blocking = c
		}
	}
	switch {
	case blocking == nil:
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionTrue, sandboxv1.ReasonReady,
			fmt.Sprintf("%s ready; credentials in Secret %s", sb.Status.Engines, sb.Status.SecretName))
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionReconciling)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
		return
	case stalled:
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonFailed, blocking.Message)
		kit.SetCondition(sb, sandboxv1.ConditionStalled, metav1.ConditionTrue, blocking.Reason, blocking.Message)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionReconciling)
	case failureReasons[blocking.Reason]:
		reason := sandboxv1.ReasonFailed
		if blocking.Reason == sandboxv1.ReasonDockerUnavailable {
			reason = sandboxv1.ReasonDockerUnavailable
		}
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, reason, blocking.Message)
		kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, blocking.Reason, "retrying: "+blocking.Message)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
	default:
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonProvisioning, blocking.Message)
		kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, blocking.Reason, blocking.Message)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
	}
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
