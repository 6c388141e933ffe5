package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// A seed runs beside the passes, as a step in its container: the pass starts
// it and returns; later passes observe it. With one worker, a worker held by
// a seed would serve no other Sandbox and no delete.
var _ = Describe("Seeds beside the pass (one worker)", func() {
	var (
		sim     *ct.EngineSim
		ns      string
		awaited uint64
	)
	BeforeEach(func() {
		awaited = host.StepsAwaited()
		sim = ct.NewHost()
		ns = ct.NewNamespace()
		stop := ct.StartManagerWith(env.Config, sim, ct.Setup{Options: ct.TestOptions(), MaxConcurrentReconciles: 1, Sweep: true,
			HostIdentitySettle: time.Millisecond})
		DeferCleanup(func() { stop() })
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
			Data: map[string]string{"10-schema.sql": "CREATE TABLE t (id int);", "20-rows.sql": "INSERT INTO t VALUES (1);"}})).To(Succeed())
	})

	It("reports Seeding with the script that runs, serves other Sandboxes meanwhile, and deletes a seeding Sandbox at once", func() {
		DeferCleanup(sim.SlowSteps(ct.SlowStep{ID: "seed", For: fake.Forever}))
		seeded := ct.Seeded(ct.NewSandbox(ns, "seeded", "slow-seed", "postgres"), "seed")
		Expect(k8sClient.Create(ctx, seeded)).To(Succeed())
		Eventually(ct.Condition(seeded, sandboxv1.ConditionServicesReady)).Should(Equal("False/Seeding"))
		// Note: "starting 2 scripts" comes first, until the seed's first progress line.
		Eventually(func() string { return ct.ConditionOf(seeded, sandboxv1.ConditionServicesReady).Message }).Should(
			MatchRegexp(`1 of 2 scripts, 10-schema\.sql running`))
		Expect(ct.Condition(seeded, sandboxv1.ConditionReady)()).To(HavePrefix("False/"))

		other := ct.NewSandbox(ns, "other", "plain", "redis")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(ct.Condition(other, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))

		cs := ct.ContainersOf(sim, seeded)
		Expect(cs).To(HaveLen(1))
		Expect(sim.RunningSteps(cs[0].ID)).To(HaveLen(1), "the seed runs in its container")
		ct.DeletedGoes(seeded)
		_, kept := sim.Peek(cs[0].ID)
		Expect(kept).To(BeFalse(), "the seeding container outlived its Sandbox")
		Expect(host.StepsAwaited()-awaited).To(BeZero(), "a pass waited on a container step")
	})

	It("goes Ready once the seed ends, with no pass waiting on it, and starts it once", func() {
		clear := sim.SlowSteps(ct.SlowStep{ID: "seed", For: 2 * time.Second})
		DeferCleanup(clear)
		seeded := ct.Seeded(ct.NewSandbox(ns, "seeded", "seed-ends", "postgres"), "seed")
		Expect(k8sClient.Create(ctx, seeded)).To(Succeed())
		Eventually(ct.Condition(seeded, sandboxv1.ConditionReady), 20*time.Second).Should(Equal("True/Ready"))
		// Note: the count, not the time it took, tells a pass that waited (hack/planted.sh).
		Expect(host.StepsAwaited()-awaited).To(BeZero(), "a pass waited on a container step")
		Expect(sim.StepsStarted("seed")).To(Equal(1))
	})

	It("enables features beside the pass: a step stuck on a lock says so and holds no worker", func() {
		DeferCleanup(sim.SlowSteps(ct.SlowStep{ID: "features-0", For: fake.Forever}))
		sb := ct.NewSandbox(ns, "featured", "stuck-features")
		sb.Spec.Services = []sandboxv1.ServiceSpec{{Engine: "postgres", Features: []sandboxv1.Feature{"vector"}}}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() string {
			if c := meta.FindStatusCondition(ct.Get(sb).Status.Conditions, sandboxv1.ConditionServicesReady); c != nil {
				return c.Message
			}
			return ""
		}).Should(MatchRegexp(`activating postgres features vector: running`))
		other := ct.NewSandbox(ns, "other", "beside-features", "redis")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(ct.Condition(other, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))
		ct.DeletedGoes(sb)
		Expect(host.StepsAwaited()-awaited).To(BeZero(), "a pass waited on a container step")
	})
})
