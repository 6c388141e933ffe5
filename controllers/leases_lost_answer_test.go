package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// answerLost makes Lease updates land on the API server while their caller is
// told they failed, as when the manager stops mid-request or the API server
// times out after committing.
type answerLost struct{ on atomic.Bool }

func (a *answerLost) update(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Update(ctx, obj, opts...)
	if err == nil && a.on.Load() {
		return context.Canceled
	}
	return err
}

// leaseReplica is a lease table alone, sharing the one host "h".
func leaseReplica(t *testing.T, lost *answerLost) (*leaseTable, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(NewScheme()).
		WithInterceptorFuncs(interceptor.Funcs{Update: lost.update}).Build()
	table := newLeaseTable(HostLeases{Namespace: "ns", Identity: "r1", Duration: time.Minute, RetryPeriod: time.Second}, c, c)
	table.hosts = func(context.Context) ([]string, error) { return []string{"h"}, nil }
	table.onAcquire, table.onLose = func(string) {}, func(string) {}
	if err := table.round(context.Background()); err != nil || !table.holds("h") {
		t.Fatalf("the first round: %v; holds h: %v, want it taken", err, table.holds("h"))
	}
	return table, c
}

func holderOf(t *testing.T, c client.Client, name string) string {
	t.Helper()
	var l coordv1.Lease
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &l); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// A renewal that landed but whose answer was lost must not cost the host: the
// next round still holds it (no other replica could have taken it meanwhile).
func TestLeaseKeptAfterALostRenewalAnswer(t *testing.T) {
	lost := &answerLost{}
	table, _ := leaseReplica(t, lost)
	lost.on.Store(true)
	_ = table.round(context.Background())
	lost.on.Store(false)
	if err := table.round(context.Background()); err != nil {
		t.Errorf("the round after: %v", err)
	}
	if !table.holds("h") {
		t.Error("the replica stopped driving h after one lost answer; nobody may drive it until its Lease expires")
	}
}

// A replica stopping mid-round (its last renewal landed, its answer lost) still
// frees its Leases, so another takes its hosts at once, not after they expire.
func TestLeasesFreedAfterALostRenewalAnswer(t *testing.T) {
	lost := &answerLost{}
	table, c := leaseReplica(t, lost)
	lost.on.Store(true)
	_ = table.round(context.Background())
	lost.on.Store(false)
	table.releaseAll(context.Background())
	table.leave(context.Background())
	if h := holderOf(t, c, hostLeaseName("h")); h != "" {
		t.Errorf("host Lease held by %q after the replica stopped, want it freed", h)
	}
	if h := holderOf(t, c, table.memberName()); h != "" {
		t.Errorf("member Lease held by %q after the replica stopped, want it freed", h)
	}
}
