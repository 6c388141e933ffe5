package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

func newGate(t *testing.T, objs ...client.Object) (Gate, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&sandboxv1.SandboxQuota{}, &sandboxv1.DockerHost{}).
		WithIndex(&sandboxv1.Sandbox{}, index.DockerHost, func(o client.Object) []string { return []string{o.(*sandboxv1.Sandbox).Spec.DockerHost} }).
		WithIndex(&sandboxv1.SandboxPool{}, index.DockerHost, func(o client.Object) []string { return []string{o.(*sandboxv1.SandboxPool).Spec.DockerHost} }).
		Build()
	return Gate{Client: c, API: c, Options: options.DefaultOptions(), Host: "h"}, c
}

func dockerHost(capacity *sandboxv1.DockerHostCapacity, labels map[string]string) *sandboxv1.DockerHost {
	return &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: "h", Labels: labels},
		Spec: sandboxv1.DockerHostSpec{Endpoint: "unix:///x.sock", Capacity: capacity}}
}

func memoryQuota(hard, used string) *sandboxv1.SandboxQuota {
	return &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec:   sandboxv1.SandboxQuotaSpec{Hard: sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse(hard))}},
		Status: sandboxv1.SandboxQuotaStatus{Used: sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse(used))}}}
}

// sandbox asks one postgres of memory; running: its container is made and
// it was admitted to admitted.
func sandbox(name, memory, admitted string) *sandboxv1.Sandbox {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec: sandboxv1.SandboxSpec{AgentID: name, Placement: sandboxv1.Placement{DockerHost: "h"}, Services: []sandboxv1.ServiceSpec{{Engine: "postgres",
			Resources: &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse(memory))}}}}}
	if admitted != "" {
		sb.Status.Admitted = &sandboxv1.Admitted{Sandboxes: 1, Memory: ptr.To(resource.MustParse(admitted))}
		sb.Status.Services = []sandboxv1.ServiceStatus{{Engine: "postgres", ContainerID: "c-" + name}}
	}
	return sb
}

func admit(t *testing.T, g Gate, r Request) Verdict {
	t.Helper()
	v, err := g.Admit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A running Sandbox whose spec grows past its namespace's quota is held: it
// keeps what it was admitted to (its record unchanged, nothing counted for the
// growth), and grows once room frees.
func TestGrowthPastQuotaHolds(t *testing.T) {
	sb := sandbox("a", "1Gi", "512Mi")
	g, c := newGate(t, dockerHost(nil, nil), memoryQuota("1Gi", "768Mi"), sb)
	v := admit(t, g, ForSandbox(g.Options, sb))
	want := "exceeded SandboxQuota q: memory: used 256Mi, requested 1Gi, hard 1Gi; admitted once room frees"
	if v.Reason() != sandboxv1.ReasonQuotaExceeded || v.Why() != want || v.Waiting || v.Admitted != nil || v.Recheck() <= 0 {
		t.Fatalf("growth past the quota: %+v, want held (QuotaExceeded %q, record unchanged)", v, want)
	}
	q := &sandboxv1.SandboxQuota{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "q"}, q); err != nil {
		t.Fatal(err)
	}
	if len(q.Status.Admitted) != 0 || q.Status.Used.Memory.String() != "768Mi" {
		t.Fatalf("the quota counts a refused growth: %+v", q.Status)
	}
	q.Status.Used.Memory = ptr.To(resource.MustParse("512Mi")) // the other Sandbox went
	if err := c.Status().Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	v = admit(t, g, ForSandbox(g.Options, sb))
	if v.Refused() || v.Units != 1 || v.Admitted == nil || v.Admitted.Memory.String() != "1Gi" {
		t.Fatalf("growth with room: %+v, want admitted at 1Gi", v)
	}
}

// A Sandbox that made nothing and finds no room waits whole, recording nothing.
func TestNewSandboxWaitsForQuota(t *testing.T) {
	sb := sandbox("b", "512Mi", "")
	g, _ := newGate(t, dockerHost(nil, nil), memoryQuota("1Gi", "768Mi"), sb)
	v := admit(t, g, ForSandbox(g.Options, sb))
	if v.Reason() != sandboxv1.ReasonQuotaExceeded || !v.Waiting || v.Admitted != nil || v.Units != 0 {
		t.Fatalf("a new Sandbox past the quota: %+v, want waiting", v)
	}
}

// A SandboxPolicy refusing the host stalls a Sandbox that made nothing; one
// that runs there stays (a policy changed later evicts nothing).
func TestPolicyJudgesOnlyWhatIsNotPlaced(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	pol := &sandboxv1.SandboxPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, Spec: sandboxv1.SandboxPolicySpec{
		DockerHostSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}}
	fresh, running := sandbox("new", "512Mi", ""), sandbox("old", "512Mi", "512Mi")
	g, _ := newGate(t, ns, pol, dockerHost(nil, map[string]string{"tier": "bronze"}), fresh, running)
	v := admit(t, g, ForSandbox(g.Options, fresh))
	if v.Reason() != sandboxv1.ReasonPolicyViolation || !v.Waiting || v.Why() != "spec.dockerHost h: SandboxPolicy gold allows namespace ns only DockerHosts matching tier=gold" {
		t.Fatalf("a new Sandbox on a host its policy refuses: %+v", v)
	}
	if v = admit(t, g, ForSandbox(g.Options, running)); v.Refused() {
		t.Fatalf("a running Sandbox: %+v, want admitted", v)
	}
}

func pool(replicas int32, admittedMembers int32) *sandboxv1.SandboxPool {
	p := &sandboxv1.SandboxPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p"},
		Spec: sandboxv1.SandboxPoolSpec{Placement: sandboxv1.Placement{DockerHost: "h"}, Replicas: ptr.To(replicas), Service: sandboxv1.ServiceSpec{Engine: "postgres"}}}
	if admittedMembers > 0 {
		mem := options.DefaultOptions().DefaultMemory.DeepCopy()
		mem.Mul(int64(admittedMembers))
		p.Status.Admitted = &sandboxv1.Admitted{PoolMembers: admittedMembers, Memory: &mem}
	}
	return p
}

// A pool scaled up on a full host keeps the members it was admitted to and
// makes none beyond them.
func TestPoolScaleUpOnFullHost(t *testing.T) {
	p := pool(4, 2)
	g, _ := newGate(t, dockerHost(&sandboxv1.DockerHostCapacity{Sandboxes: ptr.To[int32](2)}, nil), p)
	v := admit(t, g, ForPool(g.Options, p, 2, 2))
	if v.Host != "Docker host h has no capacity left for it (sandboxes: 0 of 2 used): made once room frees" || v.Waiting || v.Units != 2 ||
		v.Admitted == nil || v.Admitted.PoolMembers != 2 {
		t.Fatalf("a pool scaled up on a full host: %+v, want its 2 members kept", v)
	}
	fresh := pool(4, 0)
	fresh.UID = "fresh"
	if v = admit(t, g, ForPool(g.Options, fresh, 0, 0)); v.Host == "" || !v.Waiting || v.Units != 0 || v.Admitted != nil {
		t.Fatalf("a pool with nothing on a full host: %+v, want waiting whole", v)
	}
}

// A pool is admitted the members its quota has room for, the running ones at least.
func TestPoolMembersUpToQuota(t *testing.T) {
	p := pool(5, 2)
	q := &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec:   sandboxv1.SandboxQuotaSpec{Hard: sandboxv1.QuotaAmounts{PoolMembers: ptr.To[int32](3)}},
		Status: sandboxv1.SandboxQuotaStatus{Used: sandboxv1.QuotaAmounts{PoolMembers: ptr.To[int32](2)}}}
	g, _ := newGate(t, dockerHost(nil, nil), q, p)
	v := admit(t, g, ForPool(g.Options, p, 2, 2))
	if v.Units != 3 || v.Reason() != sandboxv1.ReasonQuotaExceeded || v.Admitted.PoolMembers != 3 {
		t.Fatalf("a pool past its quota: %+v, want 3 members admitted", v)
	}
}

func waiting(name string, age time.Duration, cond string) *sandboxv1.Sandbox {
	sb := sandbox(name, "512Mi", "")
	sb.CreationTimestamp = metav1.NewTime(time.Now().Add(-age).Truncate(time.Second))
	sb.Status.Conditions = []metav1.Condition{{Type: cond, Status: metav1.ConditionFalse, Reason: sandboxv1.ReasonQuotaExceeded,
		LastTransitionTime: metav1.Now()}}
	return sb
}

// A quota's change wakes as many Sandboxes waiting whole as it has room for,
// oldest first, and every one waiting to grow; every pool waiting for room.
func TestQuotaWakesFirstInLine(t *testing.T) {
	q := &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
		Spec:   sandboxv1.SandboxQuotaSpec{Hard: sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](3)}},
		Status: sandboxv1.SandboxQuotaStatus{Used: sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](2)}}}
	p1, p2 := pool(2, 1), pool(2, 0)
	p2.Name, p2.UID = "p2", "p2"
	for _, p := range []*sandboxv1.SandboxPool{p1, p2} {
		p.Status.Conditions = []metav1.Condition{{Type: sandboxv1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: sandboxv1.ReasonQuotaExceeded, LastTransitionTime: metav1.Now()}}
	}
	_, c := newGate(t, q, p1, p2, waiting("young", time.Minute, sandboxv1.ConditionReady), waiting("old", time.Hour, sandboxv1.ConditionReady),
		waiting("grows", time.Second, sandboxv1.ConditionUpToDate))
	got := Waiters{Reader: c, Host: "h", Kind: KindSandbox}.ForQuota(context.Background(), q)
	if len(got) != 2 || got[0].Name != "old" || got[1].Name != "grows" {
		t.Fatalf("woken Sandboxes %v, want old (room for one) and grows", got)
	}
	if got = (Waiters{Reader: c, Host: "h", Kind: KindPool}).ForQuota(context.Background(), q); len(got) != 2 {
		t.Fatalf("woken pools %v, want both", got)
	}
}
