package sandbox_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// Seeds take lanes: at most 4 at once on the host and 2 per namespace (the
// defaults), namespaces in turn; data requests take none.
var _ = Describe("Seed lanes", func() {
	var (
		sim  *ct.EngineSim
		a, b string
	)
	BeforeEach(func() {
		sim = ct.NewHost()
		a, b = ct.NewNamespace(), ct.NewNamespace()
		stop := ct.StartManager(sim, ct.TestOptions())
		DeferCleanup(func() { stop() })
		for _, ns := range []string{a, b} {
			Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
				Data: map[string]string{"10-schema.sql": "CREATE TABLE t (id int);"}})).To(Succeed())
		}
		DeferCleanup(sim.SlowSteps(ct.SlowStep{ID: "seed", For: fake.Forever}))
	})

	seeding := func(sbs ...*sandboxv1.Sandbox) func() int {
		return func() int {
			n := 0
			for _, sb := range sbs {
				for _, c := range ct.ContainersOf(sim, sb) {
					n += len(sim.RunningSteps(c.ID))
				}
			}
			return n
		}
	}

	It("starts another namespace's seed before a busy namespace's third, says where a seed waits, and never holds a reset", func() {
		var queued []*sandboxv1.Sandbox
		for i := range 20 {
			sb := ct.Seeded(ct.NewSandbox(a, fmt.Sprintf("a%d", i), fmt.Sprintf("lane-a%d", i), "postgres"), "seed")
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			queued = append(queued, sb)
		}
		Eventually(seeding(queued...), 30*time.Second).Should(Equal(2), "namespace a's two lanes")

		late := ct.Seeded(ct.NewSandbox(b, "b0", "lane-b0", "postgres"), "seed")
		Expect(k8sClient.Create(ctx, late)).To(Succeed())
		Eventually(seeding(late), 30*time.Second).Should(Equal(1), "namespace b waited behind namespace a")
		Consistently(seeding(queued...), "2s").Should(Equal(2), "namespace a ran past its lanes")

		waiting := 0
		for _, sb := range queued {
			if c := ct.ConditionOf(sb, sandboxv1.ConditionServicesReady); c.Reason == sandboxv1.ReasonSeeding {
				if ok, _ := MatchRegexp(`waiting for a seed lane: \d+(st|nd|rd|th) in namespace ` + a + `'s queue; \d of 4 host lanes busy, 2 of 2 of namespace`).Match(c.Message); ok {
					waiting++
				}
			}
		}
		Expect(waiting).To(BeNumerically(">", 0), "no waiting seed says where it waits")

		By("a reset on another Sandbox while seeds run")
		plain := ct.NewSandbox(b, "plain", "lane-plain", "redis")
		Expect(k8sClient.Create(ctx, plain)).To(Succeed())
		ct.WaitReady(plain)
		requestData(plain, "r1", sandboxv1.DataReset)
		Eventually(dataPhase(plain), 20*time.Second).Should(Equal("r1/" + string(sandboxv1.DataSucceeded)))

		By("a deleted seeding Sandbox gives its lane to the next in turn")
		var rest []*sandboxv1.Sandbox
		deleted := false
		for _, sb := range queued {
			if !deleted && seeding(sb)() == 1 {
				ct.DeletedGoes(sb)
				deleted = true
				continue
			}
			rest = append(rest, sb)
		}
		Expect(deleted).To(BeTrue())
		Eventually(seeding(rest...), 30*time.Second).Should(Equal(2), "the freed lane went unused")
	})
})
