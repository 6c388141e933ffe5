package sandboxpool_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// Admission is judged on every change that grows what an object takes, not only
// on its first create: a refused growth leaves what runs exactly as it is. The
// Sandbox's growth is in controllers/sandbox's specs of the same name.
var _ = Describe("Growth", func() {
	var ns string
	BeforeEach(func() { ns = ct.NewNamespace() })

	It("judges a pool's scale-up against its host's capacity: it keeps the members it was admitted to", func() {
		local, b := ct.NewHost(), ct.NewHost()
		ct.RegisterHost("grow-p", nil, ptr.To[int32](3))
		ct.FleetOf(local, map[string]*ct.EngineSim{"grow-p": b})
		pool := ct.NewPool(ns, "scaled", "redis", 1)
		pool.Spec.DockerHost = "grow-p"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{1, 1, 0}))

		ct.EditPool(pool, func(s *sandboxv1.SandboxPoolSpec) { s.Replicas = ptr.To[int32](100) })
		Eventually(func() string { return ct.PoolReady(pool) }).Should(ContainSubstring("no capacity left"))
		Consistently(func() int { return len(ct.Members(b, pool)) }, 2*time.Second, 50*time.Millisecond).Should(Equal(1))

		ct.EditPool(pool, func(s *sandboxv1.SandboxPoolSpec) { s.Replicas = ptr.To[int32](3) })
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{3, 3, 0}))
	})
})
