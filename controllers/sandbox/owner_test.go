package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// lifetimeOptions are the test options with a short grace period.
func lifetimeOptions(grace time.Duration) controllers.Options {
	o := testOptions()
	o.GracePeriod = grace
	return o
}

// seedOwner runs a stand-in agent container, made behind the controller's back as
// the agent's orchestrator would.
func seedOwner(host *engineSim, name string) {
	_, err := host.SeedContainer(dd.ContainerSpec{Name: name, Image: "roboco/agent:latest"}, true)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

// ownedSandbox is a Sandbox that follows its owner container (the default owner,
// roboco-agent-<agentID>); grace 0 leaves the manager's grace period.
func ownedSandbox(ns, name, agentID string, grace time.Duration, engines ...string) *sandboxv1.Sandbox {
	sb := newSandbox(ns, name, agentID, engines...)
	sb.Spec.Owner = &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyContainer}
	if grace > 0 {
		sb.Spec.Owner.GracePeriod = &metav1.Duration{Duration: grace}
	}
	return sb
}

func missingSince(sb *sandboxv1.Sandbox) *metav1.Time {
	return get(sb).Status.OwnerMissingSince
}

// deleting reports whether the Sandbox is being deleted or gone.
func deleting(sb *sandboxv1.Sandbox) bool {
	got := &sandboxv1.Sandbox{}
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), got)
	if apierrors.IsNotFound(err) {
		return true
	}
	Expect(err).NotTo(HaveOccurred())
	return !got.DeletionTimestamp.IsZero()
}

// lateBy is how late after its deadline a deletion may be observed: the requeue, a
// pass and the Delete on a loaded 2-core machine. Every "not later" below is built
// so that the fault it guards against would be later than this.
const lateBy = 2 * time.Second

// whenDeleted waits for the Sandbox's deletion and returns when it was first seen.
func whenDeleted(sb *sandboxv1.Sandbox, within time.Duration) time.Time {
	var at time.Time
	EventuallyWithOffset(1, func() bool {
		if deleting(sb) {
			at = time.Now()
			return true
		}
		return false
	}, within, 20*time.Millisecond).Should(BeTrue(), "Sandbox %s not deleted", sb.Name)
	return at
}

func containerIDs(host *engineSim, sb *sandboxv1.Sandbox) []string {
	var ids []string
	for _, c := range containersOf(host, sb) {
		ids = append(ids, c.ID)
	}
	return ids
}

// metricValue reads a counter's value, or a histogram's sample count, from
// controller-runtime's registry (0 when absent).
func metricValue(name string, labels map[string]string) float64 {
	mfs, _ := ctrlmetrics.Registry.Gather() // a stopped manager's collector may fail; ours do not
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

var _ = Describe("Owner", func() {
	var (
		host *engineSim
		ns   string
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
	})

	It("records once when the owner went missing, keeps the Sandbox within the grace period, and clears it when the owner is back", func() {
		const grace = 5 * time.Second
		startManager(host, testOptions()) // the manager's grace period is 180s: spec.owner.gracePeriod wins
		seedOwner(host, "roboco-agent-back-1")
		sb := ownedSandbox(ns, "back", "back-1", grace, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("True/Running"))
		ids := containerIDs(host, sb)

		By("noticing the owner's removal through its Docker event, not a resync")
		Expect(host.DeleteContainer("roboco-agent-back-1")).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s").Should(Equal("False/Missing"))
		since := missingSince(sb)
		Expect(since).NotTo(BeNil())
		Expect(conditionOf(sb, sandboxv1.ConditionOwnerAlive).Message).To(And(
			ContainSubstring("roboco-agent-back-1 is not found since "+since.UTC().Format(time.RFC3339)),
			ContainSubstring("deleted at")))
		deadline := since.Add(grace)

		By("not rewriting ownerMissingSince on later passes")
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-agent-back-1", Image: "roboco/agent:latest"}, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(host.DeleteContainer("roboco-agent-back-1")).To(Succeed()) // a destroy event: another pass
		Consistently(func() bool { return deleting(sb) || !missingSince(sb).Equal(since) },
			time.Until(deadline)-2*time.Second, 100*time.Millisecond).Should(BeFalse())

		By("clearing it when the owner runs again within the grace period")
		seedOwner(host, "roboco-agent-back-1")
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s").Should(Equal("True/Running"))
		Expect(missingSince(sb)).To(BeNil())
		Consistently(func() bool { return deleting(sb) }, time.Until(deadline)+2*time.Second).Should(BeFalse())
		Expect(containerIDs(host, sb)).To(ConsistOf(ids))
		Expect(eventReasons(sb)()).To(ContainElements("OwnerMissing", "OwnerBack"))
		Expect(eventReasons(sb)()).NotTo(ContainElement(sandboxv1.ReasonOwnerGone))
	})

	It("deletes the Sandbox once its owner has been missing for the grace period, and tears it down", func() {
		const grace = 3 * time.Second
		startManager(host, lifetimeOptions(grace))
		seedOwner(host, "roboco-agent-gone-1")
		sb := ownedSandbox(ns, "gone", "gone-1", 0, "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		uid := string(get(sb).UID)
		Expect(containersOf(host, sb)).To(HaveLen(2))
		deletions := metricValue("sandbox_owner_gone_deletions_total", nil)

		Expect(host.ExitContainer("roboco-agent-gone-1", 137, 0)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s").Should(Equal("False/Missing"))
		Expect(conditionOf(sb, sandboxv1.ConditionOwnerAlive).Message).To(ContainSubstring("exited (exit code 137) since"))
		created := get(sb).CreationTimestamp
		deadline := missingSince(sb).Add(grace)
		if c := created.Add(grace); c.After(deadline) {
			deadline = c
		}

		at := whenDeleted(sb, grace+5*time.Second)
		Expect(at).To(BeTemporally(">=", deadline), "deleted before ownerMissingSince + grace")
		Expect(at).To(BeTemporally("<", deadline.Add(lateBy)), "deleted late")
		Eventually(gone(sb)).Should(BeTrue())
		Expect(containersByUID(host, uid)()).To(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
		_, ownerKept := host.Peek("roboco-agent-gone-1")
		Expect(ownerKept).To(BeTrue(), "the owner container is the agent's, never ours to remove")
		Expect(eventReasons(sb)()).To(ContainElements("OwnerMissing", sandboxv1.ReasonOwnerGone, "TornDown"))
		Expect(metricValue("sandbox_owner_gone_deletions_total", nil)).To(Equal(deletions + 1))
	})

	It("keeps the Sandbox while its owner is paused, however long, and starts the grace only once it exits", func() {
		const grace = 2 * time.Second
		startManager(host, lifetimeOptions(grace))
		seedOwner(host, "roboco-agent-frozen-1")
		sb := ownedSandbox(ns, "frozen", "frozen-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		ids := containerIDs(host, sb)

		By("a paused owner, the Sandbox touched meanwhile (every touch is a pass)")
		Expect(host.Pause("roboco-agent-frozen-1")).To(Succeed())
		poke(sb)
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("True/Paused"))
		Consistently(func() bool { poke(sb); return deleting(sb) || missingSince(sb) != nil },
			3*grace, 250*time.Millisecond).Should(BeFalse(), "a paused owner is alive")
		Expect(containerIDs(host, sb)).To(Equal(ids))
		Expect(eventReasons(sb)()).NotTo(ContainElement("OwnerMissing"))

		By("an owner that exits after its pause: the grace starts")
		Expect(host.Unpause("roboco-agent-frozen-1")).To(Succeed())
		Expect(host.ExitContainer("roboco-agent-frozen-1", 0, 0)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("False/Missing"))
		whenDeleted(sb, grace+10*time.Second)
	})

	It("judges ttl and the owner's window on the API server's clock, not on a replica's that runs an hour ahead", func() {
		ahead := func() time.Time { return time.Now().Add(time.Hour) }
		skewed := func() (stop func()) {
			return startManagerWith(env.Config, host, controllers.Setup{Options: lifetimeOptions(20 * time.Second), Sweep: true, LocalClock: ahead})
		}
		stop := skewed()
		ttl := newSandbox(ns, "ttl", "ttl-1", "redis")
		ttl.Spec.TTL = &metav1.Duration{Duration: 30 * time.Minute}
		Expect(k8sClient.Create(ctx, ttl)).To(Succeed())
		waitReady(ttl)
		Consistently(func() bool { return deleting(ttl) }, 2*time.Second).Should(BeFalse(), "ttl ended 30 minutes early")
		stop()

		By("an owner window another replica opened, on the right clock, seconds ago")
		seedOwner(host, "roboco-agent-skew-1")
		stop = startManager(host, lifetimeOptions(20*time.Second))
		sb := ownedSandbox(ns, "skew", "skew-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Expect(host.DeleteContainer("roboco-agent-skew-1")).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s").Should(Equal("False/Missing"))
		stop()
		stop = skewed()
		defer stop()
		poke(sb)
		Consistently(func() bool { return deleting(sb) }, 3*time.Second).Should(BeFalse(), "deleted before its owner's grace period")
	})

	It("deletes at the original deadline across a controller restart in the window, neither later nor earlier", func() {
		// The restart falls 3s into an 8s window: a controller that started the window
		// again would delete at least 3s late, beyond lateBy.
		const grace, into = 8 * time.Second, 3 * time.Second
		stop := startManager(host, lifetimeOptions(grace))
		seedOwner(host, "roboco-agent-restart-1")
		sb := ownedSandbox(ns, "restart", "restart-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Expect(host.DeleteContainer("roboco-agent-restart-1")).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s").Should(Equal("False/Missing"))
		since := missingSince(sb)
		deadline := since.Add(grace)

		stop()
		time.Sleep(time.Until(since.Add(into))) // the controller is down: nothing to poll
		startManager(host, lifetimeOptions(grace))
		Expect(time.Now()).To(BeTemporally("<", deadline.Add(-2*time.Second)), "the restart must fall inside the window")
		at := whenDeleted(sb, grace+5*time.Second)
		Expect(at).To(BeTemporally(">=", deadline), "deleted before ownerMissingSince + grace")
		Expect(at).To(BeTemporally("<", deadline.Add(lateBy)), "the restart delayed the deletion")
		Eventually(gone(sb)).Should(BeTrue())
	})

	It("deletes at once a Sandbox whose deadline passed while no controller ran", func() {
		// A controller that started the window again would wait another 4s.
		const grace = 4 * time.Second
		stop := startManager(host, lifetimeOptions(grace))
		seedOwner(host, "roboco-agent-down-1")
		sb := ownedSandbox(ns, "down", "down-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Expect(host.DeleteContainer("roboco-agent-down-1")).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s").Should(Equal("False/Missing"))
		deadline := missingSince(sb).Add(grace)
		stop()
		time.Sleep(time.Until(deadline) + 500*time.Millisecond) // the controller is down: nothing to poll
		Expect(deleting(sb)).To(BeFalse())

		restarted := time.Now()
		startManager(host, lifetimeOptions(grace))
		at := whenDeleted(sb, 10*time.Second)
		Expect(at.Sub(restarted)).To(BeNumerically("<", grace-time.Second), "the window restarted with the controller")
		Eventually(gone(sb)).Should(BeTrue())
	})

	It("decides the Sandbox's lifetime before any Docker work for its services", func() {
		const grace = time.Second
		sb := ownedSandbox(ns, "late", "late-1", 0, "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		created := get(sb)
		created.Status.OwnerMissingSince = &metav1.Time{Time: time.Now().Add(-time.Minute)}
		Expect(k8sClient.Status().Update(ctx, created)).To(Succeed())
		time.Sleep(time.Until(created.CreationTimestamp.Add(grace))) // the controller is down: nothing to poll

		host.ResetCalls()
		startManager(host, lifetimeOptions(grace))
		whenDeleted(sb, 10*time.Second)
		Eventually(gone(sb)).Should(BeTrue())
		for _, verb := range []fake.Verb{fake.VerbImagePresent, fake.VerbPullImage, fake.VerbCreateContainer, fake.VerbExec} {
			Expect(host.Calls(verb)).To(BeZero(), "%s called for a Sandbox whose owner's grace had run out", verb)
		}
	})

	It("does not conclude the owner is missing while Docker does not answer", func() {
		const grace = 2 * time.Second
		startManager(host, lifetimeOptions(grace))
		seedOwner(host, "roboco-agent-blind-1")
		sb := ownedSandbox(ns, "blind", "blind-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("True/Running"))

		clear := host.Inject(fake.Fault{Verb: fake.VerbInspect, Ref: "roboco-agent-blind-1", Err: dd.ErrUnavailable})
		DeferCleanup(clear)
		Expect(host.ExitContainer("roboco-agent-blind-1", 0, 0)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s").Should(Equal("Unknown/DockerUnavailable"))
		Consistently(func() bool { return deleting(sb) || missingSince(sb) != nil }, grace+time.Second).Should(BeFalse())

		clear()
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "10s").Should(Equal("False/Missing"))
	})

	It("deletes a Sandbox whose owner never appears, once it is older than the grace period", func() {
		const grace = 2 * time.Second
		startManager(host, lifetimeOptions(grace))
		sb := ownedSandbox(ns, "never", "never-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive)).Should(Equal("False/Missing"))
		created := get(sb).CreationTimestamp
		at := whenDeleted(sb, grace+5*time.Second)
		Expect(at).To(BeTemporally(">=", created.Add(grace)))
		Eventually(gone(sb)).Should(BeTrue())
	})

	It("tracks no owner with owner.policy None", func() {
		const grace = time.Second
		startManager(host, lifetimeOptions(grace))
		sb := newSandbox(ns, "free", "free-1", "redis") // policy None, and no roboco-agent-free-1 anywhere
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Expect(condition(sb, sandboxv1.ConditionOwnerAlive)()).To(Equal("True/NoOwner"))
		Consistently(func() bool { return deleting(sb) || missingSince(sb) != nil }, 3*grace).Should(BeFalse())
	})
})
