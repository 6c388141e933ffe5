package sandboxpool_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
		stop := ct.StartManager(sim, ct.TestOptions())
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
})
