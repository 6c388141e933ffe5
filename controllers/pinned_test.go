package controllers_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// setHost edits the DockerHost name's spec, retrying on conflicts (its
// controllers write its status meanwhile).
func setHost(name string, edit func(*sandboxv1.DockerHostSpec)) {
	EventuallyWithOffset(1, func() error {
		h := dockerHost(name)
		edit(&h.Spec)
		return k8sClient.Update(ctx, h)
	}).Should(Succeed())
}

// withContainers counts the Sandboxes of list that have a container on host.
func withContainers(host *engineSim, list []*sandboxv1.Sandbox) int {
	n := 0
	for _, sb := range list {
		if len(containersByUID(host, string(sb.UID))()) > 0 {
			n++
		}
	}
	return n
}

// spec.dockerHost skips placement, not the host's cordon, capacity or deletion.
var _ = Describe("A Sandbox pinned to a Docker host (spec.dockerHost)", func() {
	var ns string
	var local, b *engineSim
	BeforeEach(func() {
		ns = newNamespace()
		local, b = newHost(), newHost()
	})

	It("waits while its host is cordoned, and starts once it is uncordoned; what runs there stays", func() {
		registerHost("pin-b", nil, nil)
		fleetOf(local, map[string]*engineSim{"pin-b": b})
		running := newSandbox(ns, "running", "pin-running", "redis")
		running.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, running)).To(Succeed())
		waitReady(running)

		setHost("pin-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := newSandbox(ns, "pinned", "pin-cordoned", "redis")
		sb.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
		Expect(conditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("pin-b is cordoned"))
		Expect(condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/Unschedulable"))
		Consistently(func() int { return len(containersOf(b, sb)) }, time.Second, 50*time.Millisecond).Should(BeZero())
		Expect(condition(running, sandboxv1.ConditionReady)()).To(Equal("True/Ready"), "a cordon evicted a running Sandbox")

		setHost("pin-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = false })
		waitReady(sb)
		Expect(containersOf(b, sb)).To(HaveLen(1))
	})

	It("is held to its host's capacity: of 6 pinned at once to a host for 2, never more than 2 run; one deleted admits one", func() {
		two := int32(2)
		registerHost("pin-b", nil, &two)
		fleetOf(local, map[string]*engineSim{"pin-b": b})
		var list []*sandboxv1.Sandbox
		for i := range 6 {
			sb := newSandbox(ns, fmt.Sprintf("pinned-%d", i), fmt.Sprintf("pin-cap-%d", i), "redis")
			sb.Spec.DockerHost = "pin-b"
			list = append(list, sb)
		}
		for _, sb := range list {
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		}
		readyOnes := func() (ready []*sandboxv1.Sandbox) {
			for _, sb := range list {
				if condition(sb, sandboxv1.ConditionReady)() == "True/Ready" {
					ready = append(ready, sb)
				}
			}
			return ready
		}
		Eventually(func() int { return len(readyOnes()) }).Should(Equal(2))
		Consistently(func() int { return withContainers(b, list) }, 2*time.Second, 20*time.Millisecond).Should(Equal(2))
		var waiting *sandboxv1.Sandbox
		for _, sb := range list {
			if c := conditionOf(sb, sandboxv1.ConditionReady); c.Reason == sandboxv1.ReasonUnschedulable {
				Expect(c.Message).To(ContainSubstring("pin-b has no capacity left"))
				Expect(c.Message).To(ContainSubstring("sandboxes: 2 of 2 used"))
				waiting = sb
			}
		}
		Expect(waiting).NotTo(BeNil())
		Expect(dockerHost("pin-b").Status.Allocated.Sandboxes).To(BeNumerically("<=", 2),
			"the host counts Sandboxes that wait for it")

		deleted := readyOnes()[0]
		Expect(k8sClient.Delete(ctx, deleted)).To(Succeed())
		Eventually(gone(deleted)).Should(BeTrue())
		list = slices.DeleteFunc(list, func(sb *sandboxv1.Sandbox) bool { return sb == deleted })
		Eventually(func() int { return len(readyOnes()) }, 30*time.Second).Should(Equal(2))
		Consistently(func() int { return withContainers(b, list) }, time.Second, 20*time.Millisecond).Should(BeNumerically("<=", 2))
	})

	It("does not hold its host's deletion while it waits, and is told once the host is gone", func() {
		registerHost("pin-b", nil, nil)
		fleetOf(local, map[string]*engineSim{"pin-b": b})
		setHost("pin-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := newSandbox(ns, "pinned", "pin-deleted", "redis")
		sb.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))

		Expect(k8sClient.Delete(ctx, dockerHost("pin-b"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: "pin-b"}, &sandboxv1.DockerHost{}))
		}, 45*time.Second).Should(BeTrue(), "a Sandbox that made nothing kept its host from being deleted")
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		Expect(b.Calls(fake.VerbCreateContainer)).To(BeZero())
	})

	It("pins a pool the same way: it waits whole on a host without room, and fills once room frees", func() {
		two := int32(2)
		registerHost("pin-b", nil, &two)
		fleetOf(local, map[string]*engineSim{"pin-b": b})
		big := newPool(ns, "big", "redis", 3)
		big.Spec.DockerHost = "pin-b"
		Expect(k8sClient.Create(ctx, big)).To(Succeed())
		Eventually(func() string { return poolReady(big) }).Should(HavePrefix(sandboxv1.ReasonUnschedulable + ": Docker host pin-b has no capacity left"))
		Expect(members(b, big)).To(BeEmpty())

		setHost("pin-b", func(s *sandboxv1.DockerHostSpec) { three := int32(3); s.Capacity.Sandboxes = &three })
		Eventually(poolCounts(big), 30*time.Second).Should(Equal([3]int64{3, 3, 0}), poolDescribe(big))
	})
})
