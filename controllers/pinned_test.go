package controllers_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// withContainers counts the Sandboxes of list that have a container on host.
func withContainers(host *ct.EngineSim, list []*sandboxv1.Sandbox) int {
	n := 0
	for _, sb := range list {
		if len(ct.ContainersByUID(host, string(sb.UID))()) > 0 {
			n++
		}
	}
	return n
}

// deleteHost deletes the DockerHost name and waits until it is gone; why says
// what kept it when it is not.
func deleteHost(name, why string) {
	ExpectWithOffset(1, k8sClient.Delete(ctx, ct.DockerHost(name))).To(Succeed())
	EventuallyWithOffset(1, func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &sandboxv1.DockerHost{}))
	}, 45*time.Second).Should(BeTrue(), why)
}

// spec.dockerHost skips placement, not the host's cordon, capacity or deletion.
var _ = Describe("A Sandbox pinned to a Docker host (spec.dockerHost)", func() {
	var ns string
	var local, b *ct.EngineSim
	BeforeEach(func() {
		ns = ct.NewNamespace()
		local, b = ct.NewHost(), ct.NewHost()
	})

	It("waits while its host is cordoned, and starts once it is uncordoned; what runs there stays", func() {
		ct.RegisterHost("pin-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"pin-b": b})
		running := ct.NewSandbox(ns, "running", "pin-running", "redis")
		running.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, running)).To(Succeed())
		ct.WaitReady(running)

		ct.SetHost("pin-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := ct.NewSandbox(ns, "pinned", "pin-cordoned", "redis")
		sb.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("pin-b is cordoned"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/Unschedulable"))
		Consistently(func() int { return len(ct.ContainersOf(b, sb)) }, time.Second, 50*time.Millisecond).Should(BeZero())
		Expect(ct.Condition(running, sandboxv1.ConditionReady)()).To(Equal("True/Ready"), "a cordon evicted a running Sandbox")

		ct.SetHost("pin-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = false })
		ct.WaitReady(sb)
		Expect(ct.ContainersOf(b, sb)).To(HaveLen(1))
	})

	It("is held to its host's capacity: of 6 pinned at once to a host for 2, never more than 2 run; one deleted admits one", func() {
		two := int32(2)
		ct.RegisterHost("pin-b", nil, &two)
		ct.FleetOf(local, map[string]*ct.EngineSim{"pin-b": b})
		var list []*sandboxv1.Sandbox
		for i := range 6 {
			sb := ct.NewSandbox(ns, fmt.Sprintf("pinned-%d", i), fmt.Sprintf("pin-cap-%d", i), "redis")
			sb.Spec.DockerHost = "pin-b"
			list = append(list, sb)
		}
		for _, sb := range list {
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		}
		readyOnes := func() (ready []*sandboxv1.Sandbox) {
			for _, sb := range list {
				if ct.Condition(sb, sandboxv1.ConditionReady)() == "True/Ready" {
					ready = append(ready, sb)
				}
			}
			return ready
		}
		Eventually(func() int { return len(readyOnes()) }).Should(Equal(2))
		Consistently(func() int { return withContainers(b, list) }, 2*time.Second, 20*time.Millisecond).Should(Equal(2))
		var waiting *sandboxv1.Sandbox
		for _, sb := range list {
			if c := ct.ConditionOf(sb, sandboxv1.ConditionReady); c.Reason == sandboxv1.ReasonUnschedulable {
				Expect(c.Message).To(ContainSubstring("pin-b has no capacity left"))
				Expect(c.Message).To(ContainSubstring("sandboxes: 2 of 2 used"))
				waiting = sb
			}
		}
		Expect(waiting).NotTo(BeNil())
		Expect(ct.DockerHost("pin-b").Status.Allocated.Sandboxes).To(BeNumerically("<=", 2),
			"the host counts Sandboxes that wait for it")

		deleted := readyOnes()[0]
		Expect(k8sClient.Delete(ctx, deleted)).To(Succeed())
		Eventually(ct.Gone(deleted)).Should(BeTrue())
		list = slices.DeleteFunc(list, func(sb *sandboxv1.Sandbox) bool { return sb == deleted })
		Eventually(func() int { return len(readyOnes()) }, 30*time.Second).Should(Equal(2))
		Consistently(func() int { return withContainers(b, list) }, time.Second, 20*time.Millisecond).Should(BeNumerically("<=", 2))
	})

	It("does not hold its host's deletion while it waits, and is told once the host is gone", func() {
		ct.RegisterHost("pin-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"pin-b": b})
		ct.SetHost("pin-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := ct.NewSandbox(ns, "pinned", "pin-deleted", "redis")
		sb.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))

		deleteHost("pin-b", "a Sandbox that made nothing kept its host from being deleted")
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		Expect(b.Calls(fake.VerbCreateContainer)).To(BeZero())
	})

	It("does not hold its host's deletion while its namespace's policy or quota refuses it", func() {
		ct.RegisterHost("pin-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"pin-b": b})
		ct.LabelNamespace(ns, "sandbox.roboco.io/tenant", ns)
		ct.NewPolicy(ns, ns, sandboxv1.SandboxPolicySpec{DockerHostSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "b"}}})
		refused := ct.NewSandbox(ns, "refused", "pin-refused", "redis")
		refused.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, refused)).To(Succeed())
		full := ct.NewNamespace()
		ct.NewQuota(full, sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](0)})
		waits := ct.NewSandbox(full, "waits", "pin-quota", "redis")
		waits.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, waits)).To(Succeed())
		Eventually(ct.Condition(refused, sandboxv1.ConditionStalled)).Should(Equal("True/PolicyViolation"))
		Eventually(ct.Condition(waits, sandboxv1.ConditionReady)).Should(Equal("False/QuotaExceeded"))

		deleteHost("pin-b", "a Sandbox its policy or quota refused (it made nothing) kept its host from being deleted")
		Eventually(ct.Condition(refused, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		Eventually(ct.Condition(waits, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		Expect(b.Calls(fake.VerbCreateContainer)).To(BeZero())
	})

	It("pins a pool the same way: it waits whole on a host without room, and fills once room frees", func() {
		two := int32(2)
		ct.RegisterHost("pin-b", nil, &two)
		ct.FleetOf(local, map[string]*ct.EngineSim{"pin-b": b})
		big := ct.NewPool(ns, "big", "redis", 3)
		big.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, big)).To(Succeed())
		Eventually(func() string { return ct.PoolReady(big) }).Should(HavePrefix(sandboxv1.ReasonUnschedulable + ": Docker host pin-b has no capacity left"))
		Expect(ct.Members(b, big)).To(BeEmpty())

		ct.SetHost("pin-b", func(s *sandboxv1.DockerHostSpec) { three := int32(3); s.Capacity.Sandboxes = &three })
		Eventually(ct.PoolCounts(big), 30*time.Second).Should(Equal([3]int64{3, 3, 0}), ct.PoolDescribe(big))
	})
})
