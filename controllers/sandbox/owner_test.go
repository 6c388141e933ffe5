package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// lateBy is how late after its deadline a deletion may be observed: the requeue, a
// pass and the Delete on a loaded 2-core machine. Every "not later" below is built
// so that the fault it guards against would be later than this.
const lateBy = 2 * time.Second

// whenDeleted waits for the Sandbox's deletion and returns when it was first seen.
func whenDeleted(sb *sandboxv1.Sandbox, within time.Duration) time.Time {
	var at time.Time
	EventuallyWithOffset(1, func() bool {
		if ct.Deleting(sb) {
			at = time.Now()
			return true
		}
		return false
	}, within, 20*time.Millisecond).Should(BeTrue(), "Sandbox %s not deleted", sb.Name)
	return at
}

var _ = Describe("Owner", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
	})

	It("records once when the owner went missing, keeps the Sandbox within the grace period, and clears it when the owner is back", func() {
		const grace = 5 * time.Second
		passes := ct.NewPasses()
		ct.StartManagerObserved(host, ct.TestOptions(), passes) // the manager's grace period is 180s: spec.owner.gracePeriod wins
		ct.SeedOwner(host, "roboco-agent-back-1")
		sb := ct.OwnedSandbox(ns, "back", "back-1", grace, "redis")
		passes.Follow(sb, ct.Condition(sb, sandboxv1.ConditionOwnerAlive))
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Eventually(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("True/Running"))
		ids := ct.ContainerIDs(host, sb)

		By("noticing the owner's removal through its Docker event, not a resync")
		passes.ByEvent(func() { Expect(host.DeleteContainer("roboco-agent-back-1")).To(Succeed()) }, "False/Missing")
		since := ct.MissingSince(sb)
		Expect(since).NotTo(BeNil())
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionOwnerAlive).Message).To(And(
			ContainSubstring("roboco-agent-back-1 is not found since "+since.UTC().Format(time.RFC3339)),
			ContainSubstring("deleted at")))
		deadline := since.Add(grace)

		By("not rewriting ownerMissingSince on later passes")
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-agent-back-1", Image: "roboco/agent:latest"}, false)
		Expect(err).NotTo(HaveOccurred())
		later := passes.Count()
		Expect(host.DeleteContainer("roboco-agent-back-1")).To(Succeed()) // a destroy event: another pass
		// Note: the window opens at the pass that event brought, and never runs
		// negative (a late start checks once) nor past the deadline.
		Eventually(passes.Count).Should(BeNumerically(">", later), "no pass after the destroy event")
		Consistently(func() bool { return ct.Deleting(sb) || !ct.MissingSince(sb).Equal(since) },
			max(time.Until(deadline)-2*time.Second, 0), 100*time.Millisecond).Should(BeFalse())

		By("clearing it when the owner runs again within the grace period")
		passes.ByEvent(func() { ct.SeedOwner(host, "roboco-agent-back-1") }, "True/Running")
		Expect(ct.MissingSince(sb)).To(BeNil())
		Consistently(func() bool { return ct.Deleting(sb) }, max(time.Until(deadline), 0)+2*time.Second).Should(BeFalse())
		Expect(ct.ContainerIDs(host, sb)).To(ConsistOf(ids))
		Eventually(ct.EventReasons(sb)).Should(ContainElements("OwnerMissing", "OwnerBack"))
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement(sandboxv1.ReasonOwnerGone))
	})

	It("deletes the Sandbox once its owner has been missing for the grace period, and tears it down", func() {
		const grace = 3 * time.Second
		passes := ct.NewPasses()
		ct.StartManagerObserved(host, ct.LifetimeOptions(grace), passes)
		ct.SeedOwner(host, "roboco-agent-gone-1")
		sb := ct.OwnedSandbox(ns, "gone", "gone-1", 0, "postgres", "redis")
		passes.Follow(sb, ct.Condition(sb, sandboxv1.ConditionOwnerAlive))
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		uid := string(ct.Get(sb).UID)
		Expect(ct.ContainersOf(host, sb)).To(HaveLen(2))
		deletions := ct.MetricValue("sandbox_owner_gone_deletions_total", nil)

		passes.ByEvent(func() { Expect(host.ExitContainer("roboco-agent-gone-1", 137, 0)).To(Succeed()) }, "False/Missing")
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionOwnerAlive).Message).To(ContainSubstring("exited (exit code 137) since"))
		created := ct.Get(sb).CreationTimestamp
		deadline := ct.MissingSince(sb).Add(grace)
		if c := created.Add(grace); c.After(deadline) {
			deadline = c
		}

		at := whenDeleted(sb, grace+5*time.Second)
		Expect(at).To(BeTemporally(">=", deadline), "deleted before ownerMissingSince + grace")
		Expect(at).To(BeTemporally("<", deadline.Add(lateBy)), "deleted late")
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Expect(ct.ContainersByUID(host, uid)()).To(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
		_, ownerKept := host.Peek("roboco-agent-gone-1")
		Expect(ownerKept).To(BeTrue(), "the owner container is the agent's, never ours to remove")
		Eventually(ct.EventReasons(sb)).Should(ContainElements("OwnerMissing", sandboxv1.ReasonOwnerGone, "TornDown"))
		Expect(ct.MetricValue("sandbox_owner_gone_deletions_total", nil)).To(Equal(deletions + 1))
	})

	It("keeps the Sandbox while its owner is paused, however long, and starts the grace only once it exits", func() {
		const grace = 2 * time.Second
		ct.StartManager(host, ct.LifetimeOptions(grace))
		ct.SeedOwner(host, "roboco-agent-frozen-1")
		sb := ct.OwnedSandbox(ns, "frozen", "frozen-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		ids := ct.ContainerIDs(host, sb)

		By("a paused owner, the Sandbox touched meanwhile (every touch is a pass)")
		Expect(host.Pause("roboco-agent-frozen-1")).To(Succeed())
		ct.Poke(sb)
		Eventually(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("True/Paused"))
		Consistently(func() bool { ct.Poke(sb); return ct.Deleting(sb) || ct.MissingSince(sb) != nil },
			3*grace, 250*time.Millisecond).Should(BeFalse(), "a paused owner is alive")
		Expect(ct.ContainerIDs(host, sb)).To(Equal(ids))
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement("OwnerMissing"))

		By("an owner that exits after its pause: the grace starts")
		Expect(host.Unpause("roboco-agent-frozen-1")).To(Succeed())
		Expect(host.ExitContainer("roboco-agent-frozen-1", 0, 0)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("False/Missing"))
		whenDeleted(sb, grace+10*time.Second)
	})

	It("judges ttl and the owner's window on the API server's clock, not on a replica's that runs an hour ahead", func() {
		ahead := func() time.Time { return time.Now().Add(time.Hour) }
		skewed := func() (stop func()) {
			return ct.StartManagerWith(env.Config, host, ct.Setup{Options: ct.LifetimeOptions(20 * time.Second), Sweep: true, LocalClock: ahead})
		}
		stop := skewed()
		ttl := ct.NewSandbox(ns, "ttl", "ttl-1", "redis")
		ttl.Spec.TTL = &metav1.Duration{Duration: 30 * time.Minute}
		Expect(k8sClient.Create(ctx, ttl)).To(Succeed())
		ct.WaitReady(ttl)
		Consistently(func() bool { return ct.Deleting(ttl) }, 2*time.Second).Should(BeFalse(), "ttl ended 30 minutes early")
		stop()

		By("an owner window another replica opened, on the right clock, seconds ago")
		ct.SeedOwner(host, "roboco-agent-skew-1")
		passes := ct.NewPasses()
		stop = ct.StartManagerObserved(host, ct.LifetimeOptions(20*time.Second), passes)
		sb := ct.OwnedSandbox(ns, "skew", "skew-1", 0, "redis")
		passes.Follow(sb, ct.Condition(sb, sandboxv1.ConditionOwnerAlive))
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		passes.ByEvent(func() { Expect(host.DeleteContainer("roboco-agent-skew-1")).To(Succeed()) }, "False/Missing")
		stop()
		stop = skewed()
		defer stop()
		ct.Poke(sb)
		Consistently(func() bool { return ct.Deleting(sb) }, 3*time.Second).Should(BeFalse(), "deleted before its owner's grace period")
	})

	It("deletes at the original deadline across a controller restart in the window, neither later nor earlier", func() {
		// The restart falls 3s into an 8s window: a controller that started the window
		// again would delete at least 3s late, beyond lateBy.
		const grace, into = 8 * time.Second, 3 * time.Second
		passes := ct.NewPasses()
		stop := ct.StartManagerObserved(host, ct.LifetimeOptions(grace), passes)
		ct.SeedOwner(host, "roboco-agent-restart-1")
		sb := ct.OwnedSandbox(ns, "restart", "restart-1", 0, "redis")
		passes.Follow(sb, ct.Condition(sb, sandboxv1.ConditionOwnerAlive))
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		passes.ByEvent(func() { Expect(host.DeleteContainer("roboco-agent-restart-1")).To(Succeed()) }, "False/Missing")
		since := ct.MissingSince(sb)
		deadline := since.Add(grace)

		stop()
		time.Sleep(time.Until(since.Add(into))) // the controller is down: nothing to poll
		ct.StartManager(host, ct.LifetimeOptions(grace))
		Expect(time.Now()).To(BeTemporally("<", deadline.Add(-2*time.Second)), "the restart must fall inside the window")
		at := whenDeleted(sb, grace+5*time.Second)
		Expect(at).To(BeTemporally(">=", deadline), "deleted before ownerMissingSince + grace")
		Expect(at).To(BeTemporally("<", deadline.Add(lateBy)), "the restart delayed the deletion")
		Eventually(ct.Gone(sb)).Should(BeTrue())
	})

	It("deletes at once a Sandbox whose deadline passed while no controller ran", func() {
		// A controller that started the window again would wait another 4s.
		const grace = 4 * time.Second
		passes := ct.NewPasses()
		stop := ct.StartManagerObserved(host, ct.LifetimeOptions(grace), passes)
		ct.SeedOwner(host, "roboco-agent-down-1")
		sb := ct.OwnedSandbox(ns, "down", "down-1", 0, "redis")
		passes.Follow(sb, ct.Condition(sb, sandboxv1.ConditionOwnerAlive))
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		passes.ByEvent(func() { Expect(host.DeleteContainer("roboco-agent-down-1")).To(Succeed()) }, "False/Missing")
		deadline := ct.MissingSince(sb).Add(grace)
		stop()
		time.Sleep(time.Until(deadline) + 500*time.Millisecond) // the controller is down: nothing to poll
		Expect(ct.Deleting(sb)).To(BeFalse())

		restarted := time.Now()
		ct.StartManager(host, ct.LifetimeOptions(grace))
		at := whenDeleted(sb, 10*time.Second)
		Expect(at.Sub(restarted)).To(BeNumerically("<", grace-time.Second), "the window restarted with the controller")
		Eventually(ct.Gone(sb)).Should(BeTrue())
	})

	It("decides the Sandbox's lifetime before any Docker work for its services", func() {
		const grace = time.Second
		sb := ct.OwnedSandbox(ns, "late", "late-1", 0, "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		created := ct.Get(sb)
		created.Status.OwnerMissingSince = &metav1.Time{Time: time.Now().Add(-time.Minute)}
		Expect(k8sClient.Status().Update(ctx, created)).To(Succeed())
		time.Sleep(time.Until(created.CreationTimestamp.Add(grace))) // the controller is down: nothing to poll

		host.ResetCalls()
		ct.StartManager(host, ct.LifetimeOptions(grace))
		whenDeleted(sb, 10*time.Second)
		Eventually(ct.Gone(sb)).Should(BeTrue())
		for _, verb := range []fake.Verb{fake.VerbImagePresent, fake.VerbPullImage, fake.VerbCreateContainer, fake.VerbExec} {
			Expect(host.Calls(verb)).To(BeZero(), "%s called for a Sandbox whose owner's grace had run out", verb)
		}
	})

	It("does not conclude the owner is missing while Docker does not answer", func() {
		const grace = 2 * time.Second
		passes := ct.NewPasses()
		ct.StartManagerObserved(host, ct.LifetimeOptions(grace), passes)
		ct.SeedOwner(host, "roboco-agent-blind-1")
		sb := ct.OwnedSandbox(ns, "blind", "blind-1", 0, "redis")
		passes.Follow(sb, ct.Condition(sb, sandboxv1.ConditionOwnerAlive))
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Eventually(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("True/Running"))

		clear := host.Inject(fake.Fault{Verb: fake.VerbInspect, Ref: "roboco-agent-blind-1", Err: dd.ErrUnavailable})
		DeferCleanup(clear)
		passes.ByEvent(func() { Expect(host.ExitContainer("roboco-agent-blind-1", 0, 0)).To(Succeed()) }, "Unknown/DockerUnavailable")
		Consistently(func() bool { return ct.Deleting(sb) || ct.MissingSince(sb) != nil }, grace+time.Second).Should(BeFalse())

		clear()
		Eventually(ct.Condition(sb, sandboxv1.ConditionOwnerAlive), "10s").Should(Equal("False/Missing"))
	})

	It("deletes a Sandbox whose owner never appears, once it is older than the grace period", func() {
		const grace = 2 * time.Second
		ct.StartManager(host, ct.LifetimeOptions(grace))
		sb := ct.OwnedSandbox(ns, "never", "never-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("False/Missing"))
		created := ct.Get(sb).CreationTimestamp
		at := whenDeleted(sb, grace+5*time.Second)
		Expect(at).To(BeTemporally(">=", created.Add(grace)))
		Eventually(ct.Gone(sb)).Should(BeTrue())
	})

	It("tracks no owner with owner.policy None", func() {
		const grace = time.Second
		ct.StartManager(host, ct.LifetimeOptions(grace))
		sb := ct.NewSandbox(ns, "free", "free-1", "redis") // policy None, and no roboco-agent-free-1 anywhere
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Expect(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)()).To(Equal("True/NoOwner"))
		Consistently(func() bool { return ct.Deleting(sb) || ct.MissingSince(sb) != nil }, 3*grace).Should(BeFalse())
	})
})
