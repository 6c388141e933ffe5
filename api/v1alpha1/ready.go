package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsReady says whether the Sandbox is Ready for its current spec: the controller
// saw this generation, and every service answers with the credentials in its
// Secret.
func IsReady(sb *Sandbox) bool {
	return currentTrue(sb, ConditionReady) != nil
}

// StalledCondition is the Stalled condition when the Sandbox cannot become Ready
// without a change (its spec, the Docker host, a name held by another container),
// else nil. Its message says what to change.
func StalledCondition(sb *Sandbox) *metav1.Condition {
	return currentTrue(sb, ConditionStalled)
}

// currentTrue is the condition of type t when it is True and describes the
// Sandbox's current generation.
func currentTrue(sb *Sandbox, t string) *metav1.Condition {
	c := meta.FindStatusCondition(sb.Status.Conditions, t)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != sb.Generation ||
		sb.Status.ObservedGeneration != sb.Generation {
		return nil
	}
	return c
}
