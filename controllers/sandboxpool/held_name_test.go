package sandboxpool_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// A Sandbox whose service's name a claimed member holds that no live Sandbox
// records (its Sandbox went without its teardown) stalls until the sweep
// reaps that member; meanwhile each of its passes would take a member for a
// claim whose rename fails.
var _ = Describe("Warm pools, a name held by a claimed member no live Sandbox records", func() {
	It("stalls the Sandbox of that name without destroying a member on each look", func() {
		host, ns, passes := ct.NewHost(), ct.NewNamespace(), ct.NewPasses()
		stop := ct.StartManagerObserved(host, ct.TestOptions(), passes) // grace 3 minutes: the holder stays
		DeferCleanup(func() { stop() })
		pool := ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		first := ct.NewSandbox(ns, "first", "held-1", "redis")
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		holder := ct.WaitReady(first).Status.Services[0].ContainerID
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
		// Note: gone without its teardown, as a finalizer stripped while no manager runs.
		stop()
		ct.StripFinalizers(ct.Get(first))
		stop = ct.StartManagerObserved(host, ct.TestOptions(), passes)
		// Note: scaled, so that this manager's pool passes have offered its
		// members before next's first pass, which may reserve one.
		ct.EditPool(pool, func(s *sandboxv1.SandboxPoolSpec) { s.Replicas = ptr.To[int32](3) })
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{3, 3, 1}), "the holder counts as claimed")
		memberIDs := func() []string {
			var ids []string
			for _, m := range ct.Members(host, pool) {
				if ct.IsMember(m) {
					ids = append(ids, m.ID)
				}
			}
			return ids
		}
		members := memberIDs()

		next := ct.NewSandbox(ns, "next", "held-1", "redis")
		Expect(k8sClient.Create(ctx, next)).To(Succeed())
		Eventually(ct.Condition(next, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"), func() string {
			return fmt.Sprintf("%+v", ct.Get(next).Status.Conditions)
		})
		passes.Follow(next, ct.Condition(next, sandboxv1.ConditionStalled))
		for i := range 3 {
			ct.Poke(next)
			Eventually(passes.Count).Should(BeNumerically(">", i))
		}
		Expect(ct.Condition(next, sandboxv1.ConditionStalled)()).To(Equal("True/NameConflict"))
		Eventually(memberIDs).Should(ConsistOf(members), "a member was destroyed for a claim that could not be")
		Expect(claimsOn(ct.Get(next))).To(BeEmpty(), "a claim that renamed nothing is recorded")
		_, kept := host.Peek(holder)
		Expect(kept).To(BeTrue(), "the holder, with its agent's data, was removed before the grace period")
	})
})
