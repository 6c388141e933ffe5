package sandboxpool_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// Deletion always completes: whatever a pool waits for (a host, a quota), what
// it never made is not waited for, and its quota's room is released. The
// Sandbox's cases are in controllers/sandbox's specs of the same name.
var _ = Describe("Deleting a Sandbox or pool that waits", func() {
	var ns string
	var local, b *ct.EngineSim
	BeforeEach(func() {
		ns = ct.NewNamespace()
		local, b = ct.NewHost(), ct.NewHost()
	})

	It("lets a pool pinned to a cordoned host go once its DockerHost was deleted; waiting, it holds no quota", func() {
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{PoolMembers: ptr.To(int32(5))})
		ct.RegisterHost("wait-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"wait-b": b})
		ct.SetHost("wait-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		pool := ct.NewPool(ns, "pinned", "redis", 3)
		pool.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(func() string { return ct.PoolReady(pool) }).Should(HavePrefix(sandboxv1.ReasonUnschedulable + ": "))
		// Note: the pass that says it waits wrote its quota before.
		Expect(ct.QuotaUsed(q)()).To(Equal([2]int32{0, 0}), "a pool that makes nothing keeps room from others")

		ct.DeleteHost("wait-b", false)
		Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
		Eventually(ct.PoolGone(pool), 30*time.Second).Should(BeTrue(), "a deleted pool on a deleted DockerHost was kept")
		Expect(ct.QuotaUsed(q)()).To(Equal([2]int32{0, 0}))
		Expect(ct.Members(b, pool)).To(BeEmpty())
	})

	Context("on a host that answers", func() {
		BeforeEach(func() {
			stop := ct.StartManager(local, ct.TestOptions())
			DeferCleanup(func() { stop() })
		})

		It("deletes a pool that waits for quota", func() {
			ct.NewQuota(ns, sandboxv1.QuotaAmounts{PoolMembers: ptr.To(int32(0))})
			pool := ct.NewPool(ns, "over", "redis", 2)
			Expect(k8sClient.Create(ctx, pool)).To(Succeed())
			Eventually(func() string { return ct.PoolReady(pool) }).Should(HavePrefix(sandboxv1.ReasonQuotaExceeded + ": "))
			Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
			Eventually(ct.PoolGone(pool), 30*time.Second).Should(BeTrue())
		})
	})
})
