package sandboxpool_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A member's create and start run beside the pool's pass: Docker taking its
// time over them holds no worker, and a pool deleted meanwhile goes at once.
var _ = Describe("Member creates beside the pass", func() {
	var (
		sim *ct.EngineSim
		ns  string
	)
	BeforeEach(func() {
		sim = ct.NewHost(fake.WithCallTimeout(time.Hour))
		ns = ct.NewNamespace()
		opts := ct.TestOptions()
		opts.PoolRefills = 4
		stop := ct.StartManager(sim, opts)
		DeferCleanup(func() { stop() })
	})

	It("counts held creates as starting, and a pool deleted meanwhile leaves no member", func() {
		DeferCleanup(sim.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: time.Hour}))
		pool := ct.NewPool(ns, "held", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{0, 2, 0}), ct.PoolDescribe(pool))
		Expect(sim.Calls(fake.VerbCreateContainer)).To(Equal(2), "a held create was made again")

		Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
		Eventually(ct.PoolGone(pool), 30*time.Second).Should(BeTrue(), "a pool whose creates Docker held was kept")
		Expect(ct.Members(sim, pool)).To(BeEmpty())
	})

	It("fills once held creates end", func() {
		DeferCleanup(sim.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: 2 * time.Second}))
		pool := ct.NewPool(ns, "slow", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool), 30*time.Second).Should(Equal([3]int64{2, 2, 0}), ct.PoolDescribe(pool))
		Expect(sim.Calls(fake.VerbCreateContainer)).To(Equal(2), "a member was made twice")
	})

	// A create in flight is a member the quota counts: scaling up while one
	// is held makes only what the quota has room for beside it.
	It("counts creates in flight against the pool's quota", func() {
		ct.NewQuota(ns, sandboxv1.QuotaAmounts{PoolMembers: ptr.To[int32](2)})
		DeferCleanup(sim.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: time.Hour}))
		pool := ct.NewPool(ns, "quota", "redis", 1)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(func() int { return sim.Calls(fake.VerbCreateContainer) }).Should(Equal(1))

		ct.EditPool(pool, func(s *sandboxv1.SandboxPoolSpec) { s.Replicas = ptr.To[int32](3) })
		Eventually(func() int { return sim.Calls(fake.VerbCreateContainer) }).Should(Equal(2), "members were made beyond the quota's 2 beside the create in flight")
		Eventually(func() string { return ct.PoolReady(pool) }).Should(HavePrefix(sandboxv1.ReasonQuotaExceeded + ":"))
		Consistently(func() int { return sim.Calls(fake.VerbCreateContainer) }, 2*time.Second, 50*time.Millisecond).
			Should(Equal(2), "members were made beyond the quota's 2 beside the create in flight")
	})
})
