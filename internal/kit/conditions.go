package kit

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// SetCondition sets a condition stamped with the generation it describes.
// Note: meta.SetStatusCondition does not fill ObservedGeneration; we must.
func SetCondition(sb *sandboxv1.Sandbox, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&sb.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: sb.Generation,
	})
}
