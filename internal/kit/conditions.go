package kit

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Object is an object of this API whose status holds conditions.
type Object interface {
	client.Object
	*sandboxv1.Sandbox | *sandboxv1.SandboxPool | *sandboxv1.DockerHost
}

// SetCondition sets a condition of obj stamped with the generation it describes.
// Note: meta.SetStatusCondition does not fill ObservedGeneration; we must.
func SetCondition[T Object](obj T, condType string, status metav1.ConditionStatus, reason, message string) {
	_, conditions := statusOf(obj)
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration(),
	})
}

// statusOf is obj's status, to compare, and its conditions, to set.
func statusOf[T Object](obj T) (status any, conditions *[]metav1.Condition) {
	switch o := any(obj).(type) {
	case *sandboxv1.Sandbox:
		return o.Status, &o.Status.Conditions
	case *sandboxv1.SandboxPool:
		return o.Status, &o.Status.Conditions
	case *sandboxv1.DockerHost:
		return o.Status, &o.Status.Conditions
	}
	panic("kit: Object admits no other type")
}
