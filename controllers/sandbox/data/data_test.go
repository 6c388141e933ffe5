package data

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func TestFinishedComparesTheWholeRequest(t *testing.T) {
	ckpt := &sandboxv1.DataRequest{ID: "d1", Action: sandboxv1.DataCheckpoint}
	restore := &sandboxv1.DataRequest{ID: "d1", Action: sandboxv1.DataRestore}
	redisOnly := &sandboxv1.DataRequest{ID: "d1", Action: sandboxv1.DataCheckpoint, Services: []sandboxv1.Engine{"redis"}}
	did := &sandboxv1.ServiceData{}
	did.Record(*ckpt)
	for _, tc := range []struct {
		name string
		d    *sandboxv1.ServiceData
		req  *sandboxv1.DataRequest
		want bool
	}{
		{"nothing recorded", nil, ckpt, false},
		{"the same request", did, ckpt, true},
		{"its id with another action", did, restore, false},
		{"its id and action for other services", did, redisOnly, false},
		{"another id", &sandboxv1.ServiceData{RequestID: "d0", RequestAction: sandboxv1.DataCheckpoint}, ckpt, false},
	} {
		if got := finished(tc.d, tc.req); got != tc.want {
			t.Errorf("%s: finished = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A status an earlier release wrote records the id alone: what it did under
// that id is read from its last operations, so an upgrade neither runs a
// finished request again nor takes a reused id for done.
func TestFinishedReadsAnEarlierReleasesStatus(t *testing.T) {
	at := func(id string, s int) *sandboxv1.DataOperation {
		return &sandboxv1.DataOperation{ID: id, Time: metav1.NewTime(time.Unix(int64(1000+s), 0))}
	}
	checkpointed := &sandboxv1.ServiceData{RequestID: "d1", LastCheckpoint: at("d1", 1), LastReset: at("d0", 2)}
	restoredAfter := &sandboxv1.ServiceData{RequestID: "d1", LastCheckpoint: at("d1", 1), LastRestore: at("d1", 3)}
	failed := &sandboxv1.ServiceData{RequestID: "d1", Error: "no checkpoint in this container"}
	for _, tc := range []struct {
		name   string
		d      *sandboxv1.ServiceData
		action sandboxv1.DataAction
		want   bool
	}{
		{"its checkpoint, asked again", checkpointed, sandboxv1.DataCheckpoint, true},
		{"its id reused for a restore", checkpointed, sandboxv1.DataRestore, false},
		{"the latest of two under the id", restoredAfter, sandboxv1.DataRestore, true},
		{"the earlier of two under the id", restoredAfter, sandboxv1.DataCheckpoint, false},
		{"a failed request, which is not retried", failed, sandboxv1.DataRestore, true},
	} {
		req := &sandboxv1.DataRequest{ID: "d1", Action: tc.action, Services: []sandboxv1.Engine{"redis"}}
		if got := finished(tc.d, req); got != tc.want {
			t.Errorf("%s: finished = %v, want %v", tc.name, got, tc.want)
		}
	}
}
