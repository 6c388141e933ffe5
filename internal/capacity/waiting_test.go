package capacity

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// refusedBy gives obj the conditions its pass writes when reason refuses it
// whole (a policy stalls it).
func refusedBy(conds *[]metav1.Condition, reason string) {
	ready := metav1.Condition{Type: sandboxv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}
	if reason == sandboxv1.ReasonPolicyViolation {
		ready.Reason = sandboxv1.ReasonFailed
		*conds = append(*conds, metav1.Condition{Type: sandboxv1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason})
	}
	*conds = append(*conds, ready)
}

// A host counts what holds room on it: a Sandbox its namespace's policy or
// quota refused before it made anything holds none, and does not keep the host
// from being deleted; one that runs, or was admitted, counts whatever it is
// refused now, and so does a pool (its members may run).
func TestBoundCountsWhatHoldsRoom(t *testing.T) {
	sandbox := func(name, reason string, made, admitted bool) client.Object {
		sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: sandboxv1.SandboxSpec{Placement: sandboxv1.Placement{DockerHost: "h"}, Services: []sandboxv1.ServiceSpec{{Engine: "redis"}}}}
		if reason != "" {
			refusedBy(&sb.Status.Conditions, reason)
		}
		if made {
			sb.Status.Services = []sandboxv1.ServiceStatus{{Engine: "redis", ContainerID: "c-" + name}}
		}
		if admitted {
			sb.Status.Admitted = &sandboxv1.Admitted{Sandboxes: 1, Memory: ptr.To(resource.MustParse("64Mi"))}
		}
		return sb
	}
	pool := &sandboxv1.SandboxPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "warm", UID: "uid-pool"},
		Spec: sandboxv1.SandboxPoolSpec{Placement: sandboxv1.Placement{DockerHost: "h"}, Replicas: ptr.To[int32](1), Service: sandboxv1.ServiceSpec{Engine: "redis"}}}
	refusedBy(&pool.Status.Conditions, sandboxv1.ReasonQuotaExceeded)
	objs := []client.Object{
		sandbox("new", "", false, false),
		sandbox("runs", "", true, false),
		sandbox("policy-refused", sandboxv1.ReasonPolicyViolation, false, false),
		sandbox("quota-refused", sandboxv1.ReasonQuotaExceeded, false, false),
		sandbox("host-refused", sandboxv1.ReasonUnschedulable, false, false),
		sandbox("growth-held", sandboxv1.ReasonQuotaExceeded, true, true),
		sandbox("admitted-then-refused", sandboxv1.ReasonPolicyViolation, false, true),
		pool,
	}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).
		WithIndex(&sandboxv1.Sandbox{}, index.DockerHost, func(o client.Object) []string { return []string{o.(*sandboxv1.Sandbox).Spec.DockerHost} }).
		WithIndex(&sandboxv1.SandboxPool{}, index.DockerHost, func(o client.Object) []string { return []string{o.(*sandboxv1.SandboxPool).Spec.DockerHost} }).
		Build()
	_, counted, err := Bound(context.Background(), c, options.Options{}, "h")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		if _, ok := counted[string(o.GetUID())]; ok {
			got = append(got, o.GetName())
		}
	}
	want := []string{"new", "runs", "growth-held", "admitted-then-refused", "warm"}
	if !slices.Equal(got, want) {
		t.Fatalf("the host counts %v, want %v", got, want)
	}
}
