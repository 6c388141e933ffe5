package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// answerLost makes Lease updates land on the API server while their caller is
// told they failed, as when the manager stops mid-request or the API server
// times out after committing. As with a real client, an update whose context
// is done is not sent.
type answerLost struct{ on atomic.Bool }

func (a *answerLost) update(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	err := c.Update(ctx, obj, opts...)
	if err == nil && a.on.Load() {
		return context.Canceled
	}
	return err
}

// leaseReplica is a lease table alone, holding every one of hosts.
func leaseReplica(t *testing.T, lost *answerLost, hosts ...string) (*Table, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).
		WithInterceptorFuncs(interceptor.Funcs{Update: lost.update}).Build()
	table := NewTable(Config{Namespace: "ns", Identity: "r1", Duration: time.Minute, RetryPeriod: time.Second}, c, c)
	table.Hosts = func(context.Context) ([]string, error) { return hosts, nil }
	table.OnAcquire, table.OnLose = func(string) {}, func(string) {}
	if err := table.round(context.Background()); err != nil || len(table.heldHosts()) != len(hosts) {
		t.Fatalf("the first round: %v; holds %v, want %v", err, table.heldHosts(), hosts)
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

// afterALostRenewalAnswer is a replica holding "h" after a round whose renewals
// landed while it was told they failed.
func afterALostRenewalAnswer(t *testing.T) (*Table, client.Client) {
	t.Helper()
	lost := &answerLost{}
	table, c := leaseReplica(t, lost, "h")
	lost.on.Store(true)
	_ = table.round(context.Background())
	lost.on.Store(false)
	return table, c
}

// A renewal that landed but whose answer was lost must not cost the host: the
// next round still holds it (no other replica could have taken it meanwhile).
func TestLeaseKeptAfterALostRenewalAnswer(t *testing.T) {
	table, _ := afterALostRenewalAnswer(t)
	if err := table.round(context.Background()); err != nil {
		t.Errorf("the round after: %v", err)
	}
	if !table.Holds("h") {
		t.Error("the replica stopped driving h after one lost answer; nobody may drive it until its Lease expires")
	}
}

// A replica stopping mid-round (its last renewal landed, its answer lost) still
// frees its Leases, so another takes its hosts at once, not after they expire.
func TestLeasesFreedAfterALostRenewalAnswer(t *testing.T) {
	table, c := afterALostRenewalAnswer(t)
	table.releaseAll(context.Background())
	table.leave(context.Background())
	if h := holderOf(t, c, hostLeaseName("h")); h != "" {
		t.Errorf("host Lease held by %q after the replica stopped, want it freed", h)
	}
	if h := holderOf(t, c, table.memberName()); h != "" {
		t.Errorf("member Lease held by %q after the replica stopped, want it freed", h)
	}
}

// A replica stopped in the middle of a round in which it gives a host up to a
// replica that just joined still frees that host's Lease: the stop must not
// leave it to expire.
func TestLeaseShedWhileStoppingIsFreed(t *testing.T) {
	table, c := leaseReplica(t, &answerLost{}, "h", "i")
	joined := table.newLease("sandbox-manager-r2", map[string]string{labelLeaseMember: "true"})
	joined.Spec.HolderIdentity = ptr.To("r2")
	if err := c.Create(context.Background(), joined); err != nil {
		t.Fatal(err)
	}
	stopping, stop := context.WithCancel(context.Background())
	stop()
	_ = table.round(stopping) // its share is now one host: it gives "i" up
	table.releaseAll(context.Background())
	for _, host := range []string{"h", "i"} {
		if h := holderOf(t, c, hostLeaseName(host)); h != "" {
			t.Errorf("Lease of %s held by %q after the replica stopped, want it freed", host, h)
		}
	}
}
