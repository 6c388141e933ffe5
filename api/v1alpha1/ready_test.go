package v1alpha1_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func TestIsReadyAndStalled(t *testing.T) {
	at := func(gen, observed, condGen int64, typ string, status metav1.ConditionStatus) *sandboxv1.Sandbox {
		sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "be", Generation: gen}}
		sb.Status.ObservedGeneration = observed
		sb.Status.Conditions = []metav1.Condition{{Type: typ, Status: status, ObservedGeneration: condGen, Reason: "R"}}
		return sb
	}
	for _, tc := range []struct {
		name           string
		sb             *sandboxv1.Sandbox
		ready, stalled bool
	}{
		{"Ready for the current generation", at(2, 2, 2, sandboxv1.ConditionReady, metav1.ConditionTrue), true, false},
		{"Ready for an older spec: not yet", at(3, 2, 2, sandboxv1.ConditionReady, metav1.ConditionTrue), false, false},
		{"status written, condition older", at(3, 3, 2, sandboxv1.ConditionReady, metav1.ConditionTrue), false, false},
		{"Ready False", at(1, 1, 1, sandboxv1.ConditionReady, metav1.ConditionFalse), false, false},
		{"brand new: no status yet", at(1, -1, 0, "", ""), false, false},
		{"Stalled now", at(4, 4, 4, sandboxv1.ConditionStalled, metav1.ConditionTrue), false, true},
		{"Stalled for an older spec", at(5, 4, 4, sandboxv1.ConditionStalled, metav1.ConditionTrue), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sandboxv1.IsReady(tc.sb); got != tc.ready {
				t.Errorf("IsReady = %v, want %v", got, tc.ready)
			}
			if got := sandboxv1.StalledCondition(tc.sb) != nil; got != tc.stalled {
				t.Errorf("Stalled = %v, want %v", got, tc.stalled)
			}
		})
	}
	if got := sandboxv1.SecretName(&sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "be-dev"}}); got != "be-dev-sandbox" {
		t.Errorf("SecretName = %s", got)
	}
}
