package sandbox

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// errInit says a service's init scripts cannot be had (class.InitError).
type errInit = class.InitError

// initUnusable says the init scripts cannot be had. A Sandbox that has not
// started waits for them (Stalled, InitFailed); one that runs keeps running as
// it is, its data untouched, and nothing of it changes until they are back.
func initUnusable(sb *sandboxv1.Sandbox, msg string) {
	if !quota.MadeAnything(sb) {
		stallAll(sb, sandboxv1.ReasonInitFailed, msg)
		kit.SetCondition(sb, sandboxv1.ConditionServicesReady, metav1.ConditionFalse, sandboxv1.ReasonInitFailed, msg)
		return
	}
	sb.Status.ObservedGeneration = sb.Generation
	kit.SetCondition(sb, sandboxv1.ConditionUpToDate, metav1.ConditionFalse, sandboxv1.ReasonInitFailed,
		msg+"; its running services are kept as they are meanwhile")
}
