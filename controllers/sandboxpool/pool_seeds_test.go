package sandboxpool_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// A pool's members seed as Sandboxes do: beside the pool's pass, in lanes.
var _ = Describe("Seeded pool members", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		stop := ct.StartManager(host, ct.TestOptions())
		DeferCleanup(func() { stop() })
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
			Data: map[string]string{"10-schema.sql": "CREATE TABLE t (id int);"}})).To(Succeed())
	})

	It("seeds members beside its pass, two at once in the namespace, fills another pool meanwhile, and offers each once seeded", func() {
		awaited := shost.StepsAwaited()
		clear := host.SlowSteps(ct.SlowStep{ID: "seed", For: fake.Forever})
		seeded := ct.NewPool(ns, "seeded", "postgres", 3)
		seeded.Spec.Service.Init = &sandboxv1.ServiceInit{ConfigMapRef: &sandboxv1.LocalRef{Name: "seed"}}
		Expect(k8sClient.Create(ctx, seeded)).To(Succeed())
		running := func() int {
			n := 0
			for _, m := range ct.Members(host, seeded) {
				n += len(host.RunningSteps(m.ID))
			}
			return n
		}
		Eventually(running, 30*time.Second).Should(Equal(2), "the namespace's two seed lanes")
		Consistently(running, "1s").Should(Equal(2))
		Expect(ct.PoolCounts(seeded)()).To(Equal([3]int64{0, 3, 0}))

		plain := ct.NewPool(ns, "plain", "redis", 2)
		Expect(k8sClient.Create(ctx, plain)).To(Succeed())
		Eventually(ct.PoolCounts(plain)).Should(Equal([3]int64{2, 2, 0}), ct.PoolDescribe(plain))

		By("the seeds ending")
		clear()
		for _, m := range ct.Members(host, seeded) {
			host.EndSteps(m.ID)
		}
		Eventually(ct.PoolCounts(seeded), 30*time.Second).Should(Equal([3]int64{3, 3, 0}), ct.PoolDescribe(seeded))
		Expect(host.StepsStarted("seed")).To(Equal(3), "a member was seeded again, or replaced")
		Expect(shost.StepsAwaited()-awaited).To(BeZero(), "a pass waited on a container step")
	})
})
