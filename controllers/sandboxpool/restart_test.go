package sandboxpool_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A manager that starts (or regains its host's Lease) knows no member as
// ready: one past its probe deadline is probed again before it is judged.
var _ = Describe("Warm pools a new manager finds", func() {
	It("keeps the members that answer past their probe deadline: none replaced, none counted as failed", func() {
		host, ns := ct.NewHost(), ct.NewNamespace()
		stop := ct.StartManager(host, ct.TestOptions()) // members' probe deadline: 3s
		pool := ct.NewPool(ns, "kept", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		stop()
		memberIDs := func() []string {
			var ids []string
			for _, m := range ct.Members(host, pool) {
				ids = append(ids, m.ID)
			}
			return ids
		}
		ids := memberIDs()
		Expect(ids).To(HaveLen(2))
		// Note: Docker lists whole seconds.
		Eventually(func() bool {
			for _, m := range ct.Members(host, pool) {
				if time.Since(m.CreatedAt) < 5*time.Second {
					return false
				}
			}
			return true
		}, "20s").Should(BeTrue(), "the members are not yet past their probe deadline")
		made, execs := host.Calls(fake.VerbCreateContainer), host.Calls(fake.VerbExec)

		stop = ct.StartManager(host, ct.TestOptions())
		DeferCleanup(func() { stop() })
		// Note: the new manager has judged them once it probed both, or replaced one.
		Eventually(func() bool {
			return host.Calls(fake.VerbExec) >= execs+2 || host.Calls(fake.VerbCreateContainer) > made
		}, "30s").Should(BeTrue(), "the new manager did not look at the pool")
		Consistently(memberIDs, "2s").Should(Equal(ids), "answering members were replaced")
		Expect(ct.PoolCounts(pool)()).To(Equal([3]int64{2, 2, 0}))
		Expect(host.Calls(fake.VerbCreateContainer)).To(Equal(made))
		Expect(ct.EventReasons(pool)()).NotTo(ContainElement(sandboxv1.EventMemberReplaced))
		Expect(meta.FindStatusCondition(ct.GetPool(pool).Status.Conditions, sandboxv1.ConditionStalled)).To(BeNil())
	})
})
