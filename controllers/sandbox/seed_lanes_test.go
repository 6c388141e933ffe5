package sandbox_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// A waiting seed is granted its lane by a wake, never by a look: one far back
// in its queue looks again seldom (host.LaneWaitPoll), so that many waiting
// seeds do not cost the host's other Sandboxes their passes.
var _ = Describe("Seed lanes, looks", func() {
	It("asks a seed far back in its queue to look again later than the first in line", func() {
		sim, ns, passes := ct.NewHost(), ct.NewNamespace(), ct.NewPasses()
		stop := ct.StartManagerObserved(sim, ct.TestOptions(), passes)
		DeferCleanup(func() { stop() })
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
			Data: map[string]string{"10-schema.sql": "CREATE TABLE t (id int);"}})).To(Succeed())
		DeferCleanup(sim.SlowSteps(ct.SlowStep{ID: "seed", For: fake.Forever}))
		var sbs []*sandboxv1.Sandbox
		for i := range 8 {
			sb := ct.Seeded(ct.NewSandbox(ns, fmt.Sprintf("s%d", i), fmt.Sprintf("look-s%d", i), "postgres"), "seed")
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			sbs = append(sbs, sb)
			// Note: one at a time, so that the lanes and the queue's order are the creation order.
			want := "10-schema.sql running"
			if i >= 2 {
				want = fmt.Sprintf("%s in namespace %s's queue", ordinal(i-1), ns)
			}
			Eventually(servicesMessage(sb), 30*time.Second).Should(ContainSubstring(want))
		}
		look := func(sb *sandboxv1.Sandbox, place string) time.Duration {
			passes.Follow(sb, servicesMessage(sb))
			// Note: a changed annotation brings a pass now.
			Expect(k8sClient.Patch(ctx, sb, client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"look":"`+place+`"}}}`)))).To(Succeed())
			var got time.Duration
			Eventually(func() bool {
				for _, p := range passes.All() {
					if strings.Contains(p.Read, place+" in namespace") && p.Err == nil {
						got = p.Result.RequeueAfter
						return true
					}
				}
				return false
			}, 30*time.Second).Should(BeTrue(), "no pass of the %s in line", place)
			return got
		}
		Expect(look(sbs[2], "1st")).To(BeNumerically("<=", 11*time.Second), "the first in line looks again within LaneWait")
		Expect(look(sbs[7], "6th")).To(BeNumerically(">=", 40*time.Second), "the sixth in line looks as often as the first")
	})
})

func ordinal(n int) string {
	return fmt.Sprintf("%d%s", n, map[int]string{1: "st", 2: "nd", 3: "rd"}[n]+map[bool]string{true: "th"}[n > 3])
}

// servicesMessage reads the message of a Sandbox's ServicesReady condition.
func servicesMessage(sb *sandboxv1.Sandbox) func() string {
	return func() string {
		c := meta.FindStatusCondition(ct.Get(sb).Status.Conditions, sandboxv1.ConditionServicesReady)
		if c == nil {
			return ""
		}
		return c.Message
	}
}
