package sandboxpool_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A pool that wants members while every refill slot is taken waits to be
// woken when one frees, instead of looking again every few hundred ms (each
// look lists the host's containers).
var _ = Describe("A pool waiting for a refill slot", func() {
	It("asks for no quick look while the slots are taken, and is woken when one frees", func() {
		sim, ns := ct.NewHost(fake.WithCallTimeout(time.Hour)), ct.NewNamespace()
		opts := ct.TestOptions()
		opts.PoolRefills = 1
		passes := ct.NewPasses()
		stop := ct.StartManagerWith(env.Config, sim, ct.Setup{Options: opts, Sweep: true, HostIdentitySettle: time.Millisecond,
			ObservePoolPass: passes.Observe})
		DeferCleanup(func() { stop() })

		By("a pool whose one create Docker holds: the only slot")
		clear := sim.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: time.Hour})
		holder := ct.NewPool(ns, "holder", "redis", 1)
		Expect(k8sClient.Create(ctx, holder)).To(Succeed())
		Eventually(func() int { return sim.Calls(fake.VerbCreateContainer) }).Should(Equal(1))
		clear()

		By("a second pool, which finds no slot")
		waiting := ct.NewPool(ns, "waiting", "redis", 1)
		members := func() string { return fmt.Sprint(len(ct.Members(sim, waiting)), " members") }
		passes.Follow(waiting, members)
		Expect(k8sClient.Create(ctx, waiting)).To(Succeed())
		Eventually(passes.Count).Should(BeNumerically(">=", 1))
		for _, p := range passes.All() {
			Expect(p.Read).To(Equal("0 members"))
			Expect(p.Result.RequeueAfter).To(Or(BeZero(), BeNumerically(">=", time.Second)),
				"a pool without a slot asked to look again in %s", p.Result.RequeueAfter)
		}

		By("the holder deleted: its create cut short, its slot freed, the waiting pool woken")
		passes.ByEvent(func() { Expect(k8sClient.Delete(ctx, holder)).To(Succeed()) }, "1 members")
	})
})
