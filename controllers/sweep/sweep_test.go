package sweep_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// seedLegacy puts a container with only upstream's two labels on the host, as
// upstream's SandboxProvisioner made them.
func seedLegacy(host *ct.EngineSim, name, owner string) dd.Container {
	c, err := host.SeedContainer(dd.ContainerSpec{Name: name, Image: "postgres:16-alpine", Labels: map[string]string{
		shost.LabelSandbox: "1", shost.LabelOwner: owner}}, true)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("Orphan sweep", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
	})

	It("reaps the containers of a Sandbox whose finalizer was removed by force, after the grace period and not before", func() {
		const grace = 3 * time.Second
		ct.StartManager(host, ct.LifetimeOptions(grace)) // the ticker (60s) plays no part: the deletion triggers the sweep
		sb := ct.NewSandbox(ns, "forced", "forced-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		uid := string(ct.Get(sb).UID)
		var names []string
		youngest := time.Time{}
		for _, c := range ct.ContainersOf(host, sb) {
			names = append(names, c.Name)
			full, _ := host.Peek(c.ID)
			if full.CreatedAt.After(youngest) {
				youngest = full.CreatedAt
			}
		}
		Expect(names).To(HaveLen(2))
		before := ct.Reaped("uid")

		By("deleting the Sandbox while teardown cannot proceed, and removing its finalizer by hand")
		clear := host.Inject(fake.Fault{Verb: fake.VerbRemove, Err: dd.ErrUnavailable})
		DeferCleanup(clear)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Deleting"))
		forced := ct.Get(sb)
		patch := client.MergeFrom(forced.DeepCopy())
		forced.Finalizers = nil
		Expect(k8sClient.Patch(ctx, forced, patch)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		clear()
		Expect(time.Now()).To(BeTemporally("<", youngest.Add(grace-time.Second)), "the test must start inside the grace period")

		By("leaving them alone for the grace period, then removing them with their volumes")
		for _, name := range names {
			at := ct.WhenGone(host, name, grace+5*time.Second)
			Expect(at).To(BeTemporally(">=", youngest.Add(grace)), "%s reaped before the grace period", name)
		}
		Expect(ct.ContainersByUID(host, uid)()).To(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
		Expect(ct.Reaped("uid")).To(Equal(before + 2))
	})

	It("reaps a legacy container only once its owner container is gone", func() {
		const grace = 2 * time.Second
		ct.StartManager(host, ct.SweepOptions(grace))
		ct.SeedOwner(host, "roboco-agent-legacy-1")
		seedLegacy(host, "roboco-sandbox-pg-legacy-1", "roboco-agent-legacy-1")
		before := ct.Reaped("legacy")
		passes := ct.MetricValue("sandbox_sweep_duration_seconds", nil)

		By("keeping it, older than the grace period, while its owner runs")
		Consistently(ct.Exists(host, "roboco-sandbox-pg-legacy-1"), grace+2*time.Second).Should(BeTrue())
		Expect(ct.MetricValue("sandbox_sweep_duration_seconds", nil)).To(BeNumerically(">=", passes+2), "the sweep must have run meanwhile")

		By("removing it a grace period after its owner is gone")
		Expect(host.DeleteContainer("roboco-agent-legacy-1")).To(Succeed())
		removed := time.Now()
		at := ct.WhenGone(host, "roboco-sandbox-pg-legacy-1", grace+5*time.Second)
		Expect(at.Sub(removed)).To(BeNumerically(">=", grace), "an owner restarting within the grace period must not lose its sandbox")
		Expect(ct.Reaped("legacy")).To(Equal(before + 1))
		Expect(host.Volumes()).To(BeEmpty())
	})

	It("keeps a legacy container whose owner restarts within the grace period", func() {
		const grace = 3 * time.Second
		ct.StartManager(host, ct.SweepOptions(grace))
		ct.SeedOwner(host, "roboco-agent-legacy-2")
		seedLegacy(host, "roboco-sandbox-pg-legacy-2", "roboco-agent-legacy-2")
		Consistently(ct.Exists(host, "roboco-sandbox-pg-legacy-2"), grace).Should(BeTrue())
		Expect(host.ExitContainer("roboco-agent-legacy-2", 0, 0)).To(Succeed())
		Expect(host.DeleteContainer("roboco-agent-legacy-2")).To(Succeed())
		ct.SeedOwner(host, "roboco-agent-legacy-2")
		Consistently(ct.Exists(host, "roboco-sandbox-pg-legacy-2"), grace+2*time.Second).Should(BeTrue())
	})

	It("never reaps a live Sandbox's containers, even when its agentID matches an orphan's owner label", func() {
		const grace = 2 * time.Second
		ct.StartManager(host, ct.SweepOptions(grace))
		sb := ct.NewSandbox(ns, "live", "live-1", "postgres", "redis") // owner roboco-agent-live-1 does not exist
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		ids := ct.ContainerIDs(host, sb)
		for _, c := range ct.ContainersOf(host, sb) {
			Expect(c.Labels).To(HaveKeyWithValue(shost.LabelOwner, "roboco-agent-live-1"))
		}
		seedLegacy(host, "roboco-sandbox-pg-old-live-1", "roboco-agent-live-1")
		ct.SeedOrphan(host, "roboco-sandbox-redis-old-live-1", ns, "live", string(uuid.NewUUID())) // a previous incarnation

		ct.WhenGone(host, "roboco-sandbox-pg-old-live-1", grace+5*time.Second)
		ct.WhenGone(host, "roboco-sandbox-redis-old-live-1", grace+5*time.Second)
		Consistently(func() []string { return ct.ContainerIDs(host, sb) }, 2*time.Second).Should(ConsistOf(ids))
		got := ct.Get(sb)
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		for _, s := range got.Status.Services {
			Expect(s.Restarts).To(BeZero())
		}
	})

	It("removes nothing while listing fails or the event stream is behind, and says so", func() {
		const grace = time.Second
		ct.StartManager(host, ct.SweepOptions(grace))
		Eventually(func() float64 { return ct.MetricValue("sandbox_sweep_duration_seconds", nil) }).Should(BeNumerically(">", 0))

		By("failing the container list: nothing is removed, however old")
		listErrors := ct.SweepErrors("list-containers")
		clearList := host.Inject(fake.Fault{Verb: fake.VerbList, Err: dd.ErrUnavailable})
		DeferCleanup(clearList)
		ct.SeedOrphan(host, "roboco-sandbox-redis-lost-1", ns, "lost", string(uuid.NewUUID()))
		seedLegacy(host, "roboco-sandbox-pg-lost-2", "roboco-agent-lost-2")
		host.ResetCalls()
		Consistently(func() bool {
			return ct.Exists(host, "roboco-sandbox-redis-lost-1")() && ct.Exists(host, "roboco-sandbox-pg-lost-2")()
		}, 3*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbRemove)).To(BeZero())
		Expect(ct.SweepErrors("list-containers")).To(BeNumerically(">", listErrors))

		By("failing the owner's inspect: still nothing, not even the UID orphan")
		inspectErrors := ct.SweepErrors("inspect-owner")
		clearInspect := host.Inject(fake.Fault{Verb: fake.VerbInspect, Ref: "roboco-agent-lost-2", Err: dd.ErrUnavailable})
		DeferCleanup(clearInspect)
		clearList()
		Eventually(func() float64 { return ct.SweepErrors("inspect-owner") }).Should(BeNumerically(">", inspectErrors))
		Consistently(ct.Exists(host, "roboco-sandbox-redis-lost-1"), 2*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbRemove)).To(BeZero())

		By("breaking the event stream: still nothing until it resyncs")
		eventErrors := ct.SweepErrors("events")
		host.DropEvents()
		clearInspect()
		Eventually(func() float64 { return ct.SweepErrors("events") }).Should(BeNumerically(">", eventErrors))
		Consistently(ct.Exists(host, "roboco-sandbox-redis-lost-1"), 2*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbRemove)).To(BeZero())

		By("reaping both once everything answers")
		host.RestoreEvents()
		ct.WhenGone(host, "roboco-sandbox-redis-lost-1", 10*time.Second)
		ct.WhenGone(host, "roboco-sandbox-pg-lost-2", 10*time.Second)
	})

	It("never judges another control plane's containers when several share a host", func() {
		const grace = time.Second
		opts := ct.SweepOptions(grace)
		opts.Instance = "mine"
		ct.StartManager(host, opts)
		// Another instance's container: its UID means nothing to our API server.
		theirs := ct.SeedOrphan(host, "roboco-sandbox-redis-theirs-1", ns, "theirs", string(uuid.NewUUID()))
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-mine-1", Image: "redis:8-alpine", Labels: map[string]string{
			shost.LabelSandbox: "1", shost.LabelUID: string(uuid.NewUUID()), shost.LabelInstance: "mine",
			shost.LabelNamespace: ns, shost.LabelName: "mine"}}, true)
		Expect(err).NotTo(HaveOccurred())
		ct.WhenGone(host, "roboco-sandbox-redis-mine-1", grace+5*time.Second)
		Consistently(ct.Exists(host, theirs.Name), 2*time.Second).Should(BeTrue())
	})

	It("judges only the containers its selector names", func() {
		const grace = time.Second
		opts := ct.SweepOptions(grace)
		opts.SweepSelector = map[string]string{"sandbox.roboco.io/test-run": "mine"}
		ct.StartManager(host, opts)
		foreign := ct.SeedOrphan(host, "roboco-sandbox-redis-theirs-1", ns, "theirs", string(uuid.NewUUID()))
		seedLegacy(host, "roboco-sandbox-pg-theirs-2", "roboco-agent-theirs-2")
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-mine-1", Image: "redis:8-alpine", Labels: map[string]string{
			shost.LabelSandbox: "1", shost.LabelUID: string(uuid.NewUUID()), shost.LabelInstance: ct.SuiteInstance(),
			"sandbox.roboco.io/test-run": "mine"}}, true)
		Expect(err).NotTo(HaveOccurred())
		ct.WhenGone(host, "roboco-sandbox-redis-mine-1", grace+5*time.Second)
		Consistently(func() bool {
			return ct.Exists(host, foreign.Name)() && ct.Exists(host, "roboco-sandbox-pg-theirs-2")()
		}, 2*time.Second).Should(BeTrue())
	})

	It("costs one container list per pass, plus one inspect per legacy owner, with 200 labelled containers", func() {
		const grace = time.Hour // nothing comes of age: the cost of looking
		opts := ct.LifetimeOptions(grace)
		opts.SweepInterval = 500 * time.Millisecond
		for i := range 150 {
			ct.SeedOrphan(host, fmt.Sprintf("roboco-sandbox-redis-bulk-%d", i), ns, fmt.Sprintf("bulk-%d", i), string(uuid.NewUUID()))
		}
		for i := range 50 {
			seedLegacy(host, fmt.Sprintf("roboco-sandbox-pg-bulk-%d", i), fmt.Sprintf("roboco-agent-bulk-%d", i%10))
		}
		ct.StartManager(host, opts)
		Eventually(func() float64 { return ct.MetricValue("sandbox_sweep_duration_seconds", nil) }).Should(BeNumerically(">", 0))
		host.ResetCalls()
		passes := ct.MetricValue("sandbox_sweep_duration_seconds", nil)
		Eventually(func() float64 { return ct.MetricValue("sandbox_sweep_duration_seconds", nil) }, "10s").Should(BeNumerically(">=", passes+5))
		n := ct.MetricValue("sandbox_sweep_duration_seconds", nil) - passes
		lists, inspects, removes := float64(host.Calls(fake.VerbList)), float64(host.Calls(fake.VerbInspect)), host.Calls(fake.VerbRemove)
		AddReportEntry("sweep cost (fake, 200 containers)", fmt.Sprintf("%.1f lists, %.1f inspects per pass over %.0f passes", lists/n, inspects/n, n))
		Expect(lists / n).To(BeNumerically("~", 1, 0.3))
		Expect(inspects / n).To(BeNumerically("~", 10, 3)) // the 10 legacy owners
		Expect(removes).To(BeZero())
	})
})
