package sandbox_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// A container's create and start run beside the pass: Docker taking its time
// over one (a loaded host starts a container in seconds) holds no worker.
var _ = Describe("Creates beside the pass (one worker)", func() {
	var (
		sim *ct.EngineSim
		ns  string
	)
	BeforeEach(func() {
		// Note: a call timeout past every wait here, so that only Docker ends the create.
		sim = ct.NewHost(fake.WithCallTimeout(time.Hour))
		ns = ct.NewNamespace()
		stop := ct.StartManagerWith(env.Config, sim, ct.Setup{Options: ct.TestOptions(), MaxConcurrentReconciles: 1, Sweep: true,
			HostIdentitySettle: time.Millisecond})
		DeferCleanup(func() { stop() })
	})

	held := func(agentID string, d time.Duration) {
		redis, _ := engine.Lookup("redis")
		DeferCleanup(sim.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Ref: engine.ContainerName(redis, agentID), Delay: d}))
	}

	It("says it is creating, serves other Sandboxes meanwhile, and deletes it at once, leaving nothing", func() {
		held("held-create", time.Hour)
		slow := ct.NewSandbox(ns, "slow", "held-create", "redis")
		Expect(k8sClient.Create(ctx, slow)).To(Succeed())
		Eventually(messages(slow)).Should(ContainSubstring("creating roboco-sandbox-redis-held-create ("))
		Expect(ct.Condition(slow, sandboxv1.ConditionReady)()).To(HavePrefix("False/"))

		other := ct.NewSandbox(ns, "other", "beside-create", "redis")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(ct.Condition(other, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))

		uid := string(ct.Get(slow).UID)
		ct.DeletedGoes(slow)
		Expect(ct.ContainersByUID(sim, uid)()).To(BeEmpty(), "the create cut short left its container")
	})

	It("goes on once a held create ends, with one create", func() {
		held("slow-create", 3*time.Second)
		creates := sim.Calls(fake.VerbCreateContainer)
		sb := ct.NewSandbox(ns, "slow", "slow-create", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 30*time.Second).Should(Equal("True/Ready"))
		Expect(sim.Calls(fake.VerbCreateContainer) - creates).To(Equal(1))
		Expect(ct.ContainersOf(sim, sb)).To(HaveLen(1))
	})
})

// messages joins the messages of sb's conditions.
func messages(sb *sandboxv1.Sandbox) func() string {
	return func() string {
		var out []string
		for _, c := range ct.Get(sb).Status.Conditions {
			out = append(out, c.Type+": "+c.Message)
		}
		return strings.Join(out, "; ")
	}
}
