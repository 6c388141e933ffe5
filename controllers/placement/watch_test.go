package placement

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// A host change re-queues the unbound objects only when one of them may fit now.
func TestPlacementLooksAgainOnlyWhenAHostMayFitMore(t *testing.T) {
	base := func() *sandboxv1.DockerHost {
		h := &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 1, Labels: map[string]string{"zone": "b"}}}
		h.Status.Allocated.Sandboxes = 3
		h.Status.Conditions = []metav1.Condition{{Type: sandboxv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
		return h
	}
	reserve := func(h *sandboxv1.DockerHost) {
		h.Status.Reservations = []sandboxv1.Reservation{{UID: "u", Sandboxes: 1, Expires: metav1.NewTime(time.Now().Add(time.Minute))}}
	}
	for _, tc := range []struct {
		name   string
		before func(*sandboxv1.DockerHost)
		after  func(*sandboxv1.DockerHost)
		want   bool
	}{
		{"a Sandbox bound there is counted", nil, func(h *sandboxv1.DockerHost) { h.Status.Allocated.Sandboxes = 4 }, false},
		{"a reservation becomes a counted Sandbox", reserve, func(h *sandboxv1.DockerHost) { h.Status.Allocated.Sandboxes = 4 }, false},
		{"another replica drives it", nil, func(h *sandboxv1.DockerHost) { h.Status.Manager = "r2" }, false},
		{"a Sandbox there is gone", nil, func(h *sandboxv1.DockerHost) { h.Status.Allocated.Sandboxes = 2 }, true},
		{"a reservation dropped unbound", reserve, func(h *sandboxv1.DockerHost) { h.Status.Reservations = nil }, true},
		{"its spec changed", nil, func(h *sandboxv1.DockerHost) { h.Generation = 2 }, true},
		{"its labels changed", nil, func(h *sandboxv1.DockerHost) { h.Labels = map[string]string{"zone": "c"} }, true},
		{"it stopped answering", nil, func(h *sandboxv1.DockerHost) { h.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
	} {
		old, cur := base(), base()
		if tc.before != nil {
			tc.before(old)
			tc.before(cur)
		}
		tc.after(cur)
		if got := mayFitMore().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
			t.Errorf("%s: looks again %v, want %v", tc.name, got, tc.want)
		}
	}
}
