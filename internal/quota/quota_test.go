package quota

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func newClient(t *testing.T, qs ...*sandboxv1.SandboxQuota) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := sandboxv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&sandboxv1.SandboxQuota{})
	for _, q := range qs {
		b = b.WithObjects(q)
	}
	return b.Build()
}

func quotaOf(name string, hard sandboxv1.QuotaAmounts) *sandboxv1.SandboxQuota {
	return &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: sandboxv1.SandboxQuotaSpec{Hard: hard}}
}

func sandboxReq(uid string, mem string) Request {
	return Request{Namespace: "ns", Name: uid, Kind: "Sandbox", UID: types.UID(uid),
		Unit: Amounts{Sandboxes: 1, Memory: resource.MustParse(mem)}, Count: 1}
}

func admit(t *testing.T, c client.Client, r Request) Verdict {
	t.Helper()
	v, err := Admit(context.Background(), c, c, r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAdmitUpToEveryQuota(t *testing.T) {
	c := newClient(t, quotaOf("count", sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](2)}),
		quotaOf("mem", sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("1Gi"))}))
	if v := admit(t, c, sandboxReq("a", "512Mi")); v.Admitted != 1 {
		t.Fatalf("a: %+v", v)
	}
	if v := admit(t, c, sandboxReq("b", "768Mi")); v.Admitted != 0 || v.Why != "exceeded SandboxQuota mem: memory: used 512Mi, requested 768Mi, hard 1Gi; admitted once room frees" {
		t.Fatalf("b over the memory quota: %+v", v)
	}
	if v := admit(t, c, sandboxReq("c", "256Mi")); v.Admitted != 1 {
		t.Fatalf("c: %+v", v)
	}
	if v := admit(t, c, sandboxReq("d", "1Mi")); v.Admitted != 0 || v.Why != "exceeded SandboxQuota count: sandboxes: used 2, requested 1, hard 2; admitted once room frees" {
		t.Fatalf("d over the count quota: %+v", v)
	}
	// Admitting again what is admitted changes nothing and costs no write.
	if v := admit(t, c, sandboxReq("a", "512Mi")); v.Admitted != 1 {
		t.Fatalf("a again: %+v", v)
	}
	if err := Release(context.Background(), c, c, "ns", "a"); err != nil {
		t.Fatal(err)
	}
	if v := admit(t, c, sandboxReq("d", "1Mi")); v.Admitted != 1 {
		t.Fatalf("d after a's release: %+v", v)
	}
	q := &sandboxv1.SandboxQuota{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "mem"}, q); err != nil {
		t.Fatal(err)
	}
	if q.Status.Summary != "memory 257Mi/1Gi" || len(q.Status.Admitted) != 2 {
		t.Fatalf("mem quota after: %q %+v", q.Status.Summary, q.Status.Admitted)
	}
}

func TestAdmitKeepsWhatRuns(t *testing.T) {
	c := newClient(t, quotaOf("q", sandboxv1.QuotaAmounts{PoolMembers: ptr.To[int32](3)}))
	pool := Request{Namespace: "ns", Name: "p", Kind: "SandboxPool", UID: "p", Unit: Amounts{PoolMembers: 1}, Count: 5}
	if v := admit(t, c, pool); v.Admitted != 3 || v.Why == "" {
		t.Fatalf("a pool of 5 under 3: %+v", v)
	}
	other := pool
	other.UID, other.Name, other.Count, other.Min = "o", "o", 2, 2
	if v := admit(t, c, other); v.Admitted != 2 {
		t.Fatalf("two members already running are admitted whatever the quota says: %+v", v)
	}
	// The first pool keeps its 3 (admitted before), but gets no more.
	if v := admit(t, c, pool); v.Admitted != 3 {
		t.Fatalf("the first pool again: %+v", v)
	}
	pool.Count = 1 // scaled down: its admission shrinks
	if v := admit(t, c, pool); v.Admitted != 1 {
		t.Fatalf("scaled down: %+v", v)
	}
}

func TestAdmitWithoutQuotaAdmitsAll(t *testing.T) {
	c := newClient(t)
	if v := admit(t, c, sandboxReq("a", "64Gi")); v.Admitted != 1 || v.Why != "" {
		t.Fatalf("no quota: %+v", v)
	}
}
