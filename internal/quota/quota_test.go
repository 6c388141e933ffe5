package quota

import (
	"context"
	"fmt"
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
	if q := get(t, c, "mem"); q.Status.Summary != "memory 257Mi/1Gi" || len(q.Status.Admitted) != 2 {
		t.Fatalf("mem quota after: %q %+v", q.Status.Summary, q.Status.Admitted)
	}
}

func get(t *testing.T, c client.Client, name string) *sandboxv1.SandboxQuota {
	t.Helper()
	q := &sandboxv1.SandboxQuota{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, q); err != nil {
		t.Fatal(err)
	}
	return q
}

// recorded is r admitted whole, as its status would record it.
func recorded(r Request) *Amounts {
	a := r.want(r.Count)
	return &a
}

// A Sandbox that grows is judged for its growth only; refused, it keeps what it
// was admitted to (the quota counts it as before); shrinking always passes.
func TestGrowthIsJudged(t *testing.T) {
	c := newClient(t, quotaOf("mem", sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("1Gi"))}))
	small := sandboxReq("a", "128Mi")
	small.Hold = true
	if v := admit(t, c, small); v.Admitted != 1 {
		t.Fatalf("a at 128Mi: %+v", v)
	}
	big := small
	big.Unit = Amounts{Sandboxes: 1, Memory: resource.MustParse("4Gi")}
	big.Recorded = recorded(small)
	if v := admit(t, c, big); v.Admitted != 0 || v.Why != "exceeded SandboxQuota mem: memory: used 0, requested 4Gi, hard 1Gi; admitted once room frees" {
		t.Fatalf("a grown to 4Gi under 1Gi: %+v", v)
	}
	if q := get(t, c, "mem"); q.Status.Summary != "memory 128Mi/1Gi" {
		t.Fatalf("a refused growth still counts what it was admitted to: %q", q.Status.Summary)
	}
	mid := big
	mid.Unit.Memory = resource.MustParse("768Mi")
	if v := admit(t, c, mid); v.Admitted != 1 {
		t.Fatalf("a grown to 768Mi: %+v", v)
	}
	other := sandboxReq("b", "512Mi")
	if v := admit(t, c, other); v.Admitted != 0 {
		t.Fatalf("b beside a's 768Mi: %+v", v)
	}
	shrunk := mid
	shrunk.Recorded = recorded(mid)
	shrunk.Unit.Memory = resource.MustParse("256Mi")
	if v := admit(t, c, shrunk); v.Admitted != 1 {
		t.Fatalf("a shrunk: %+v", v)
	}
	if v := admit(t, c, other); v.Admitted != 1 {
		t.Fatalf("b after a shrank: %+v", v)
	}
	if q := get(t, c, "mem"); q.Status.Summary != "memory 768Mi/1Gi" {
		t.Fatalf("after: %q", q.Status.Summary)
	}
}

// The recount counts each object once (its entry in flight, else its record),
// drops the entries their objects recorded or that are gone, and so keeps the
// quota's size independent of how many objects it admitted.
func TestRecountDropsRecordedEntries(t *testing.T) {
	c := newClient(t, quotaOf("q", sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](100)}))
	var objects []Object
	for i := range 50 {
		r := sandboxReq(fmt.Sprint("s", i), "64Mi")
		if v := admit(t, c, r); v.Admitted != 1 {
			t.Fatalf("%d: %+v", i, v)
		}
		if i < 40 { // recorded by its status; the last ten are in flight
			objects = append(objects, Object{UID: r.UID, Recorded: recorded(r)})
		}
	}
	q := get(t, c, "q")
	if len(q.Status.Admitted) != 50 {
		t.Fatalf("entries in flight: %d", len(q.Status.Admitted))
	}
	gone := func(a sandboxv1.QuotaAdmission) (bool, error) { return a.Name == "s49", nil }
	changed, err := Recount(q, objects, gone)
	if err != nil || !changed {
		t.Fatalf("recount: %v %v", changed, err)
	}
	if len(q.Status.Admitted) != 9 || q.Status.Summary != "sandboxes 49/100" {
		t.Fatalf("after the recount: %d entries, %q", len(q.Status.Admitted), q.Status.Summary)
	}
	if changed, _ := Recount(q, objects, gone); changed {
		t.Fatal("a second recount changed the quota")
	}
}

// A recount that would only drop a few recorded entries writes nothing: an
// admission (a claim) costs no second quota write.
func TestRecountLeavesFewRecordedEntries(t *testing.T) {
	c := newClient(t, quotaOf("q", sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](100)}))
	var objects []Object
	for i := range doneEntriesKept {
		r := sandboxReq(fmt.Sprint("s", i), "64Mi")
		admit(t, c, r)
		objects = append(objects, Object{UID: r.UID, Recorded: recorded(r)})
	}
	q := get(t, c, "q")
	if changed, err := Recount(q, objects, func(sandboxv1.QuotaAdmission) (bool, error) { return false, nil }); err != nil || changed {
		t.Fatalf("recount of %d recorded entries: changed %v, %v", doneEntriesKept, changed, err)
	}
	// One gone changes used: the recount writes, dropping every done entry.
	if changed, _ := Recount(q, objects[1:], func(sandboxv1.QuotaAdmission) (bool, error) { return true, nil }); !changed ||
		len(q.Status.Admitted) != 0 || q.Status.Summary != fmt.Sprintf("sandboxes %d/100", doneEntriesKept-1) {
		t.Fatalf("after one went: %d entries, %q", len(q.Status.Admitted), q.Status.Summary)
	}
}

// Entries written by an earlier release (one per admitted object, its status
// recording none) count each object once after an upgrade.
func TestRecountCountsEarlierEntriesOnce(t *testing.T) {
	q := quotaOf("q", sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("1Gi"))})
	mem := resource.MustParse("256Mi")
	q.Status.Admitted = []sandboxv1.QuotaAdmission{
		{UID: "made", Kind: "Sandbox", Name: "made", Sandboxes: 1, Memory: &mem},
		{UID: "waiting", Kind: "Sandbox", Name: "waiting", Sandboxes: 1, Memory: &mem},
	}
	made := Amounts{Sandboxes: 1, Memory: mem} // its demand: it made containers
	objects := []Object{{UID: "made", Recorded: &made}, {UID: "waiting"}}
	if _, err := Recount(q, objects, func(sandboxv1.QuotaAdmission) (bool, error) { return false, nil }); err != nil {
		t.Fatal(err)
	}
	if q.Status.Summary != "memory 512Mi/1Gi" || len(q.Status.Admitted) != 1 {
		t.Fatalf("after the upgrade's recount: %q, %+v", q.Status.Summary, q.Status.Admitted)
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
