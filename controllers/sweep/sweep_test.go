package controllers_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// sweepOptions are the test options with a short grace period and a sweep every second.
func sweepOptions(grace time.Duration) controllers.Options {
	o := lifetimeOptions(grace)
	o.SweepInterval = time.Second
	return o
}

// seedLegacy puts a container with only upstream's two labels on the host, as
// upstream's SandboxProvisioner made them.
func seedLegacy(host *engineSim, name, owner string) dd.Container {
	c, err := host.SeedContainer(dd.ContainerSpec{Name: name, Image: "postgres:16-alpine", Labels: map[string]string{
		shost.LabelSandbox: "1", shost.LabelOwner: owner}}, true)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

// seedOrphan puts a container of ours on the host whose Sandbox (ns/name, uid) does
// not exist.
func seedOrphan(host *engineSim, container, ns, name, uid string) dd.Container {
	return seedOrphanOf(host, suiteInstance(), container, ns, name, uid)
}

// seedOrphanOf is seedOrphan made by a manager of the given instance.
func seedOrphanOf(host *engineSim, instance, container, ns, name, uid string) dd.Container {
	c, err := host.SeedContainer(dd.ContainerSpec{Name: container, Image: "redis:8-alpine", Labels: map[string]string{
		shost.LabelSandbox: "1", shost.LabelOwner: "roboco-agent-" + name,
		shost.LabelNamespace: ns, shost.LabelName: name, shost.LabelUID: uid, shost.LabelEngine: "redis",
		shost.LabelInstance: instance}}, true)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

func exists(host *engineSim, name string) func() bool {
	return func() bool {
		_, ok := host.Peek(name)
		return ok
	}
}

// whenGone waits for a container to disappear and returns when it was first seen gone.
func whenGone(host *engineSim, name string, within time.Duration) time.Time {
	var at time.Time
	EventuallyWithOffset(1, func() bool {
		if _, ok := host.Peek(name); !ok {
			at = time.Now()
			return true
		}
		return false
	}, within, 20*time.Millisecond).Should(BeTrue(), "%s not removed", name)
	return at
}

func reaped(kind string) float64 {
	return metricValue("sandbox_orphans_reaped_total", map[string]string{"kind": kind})
}

func sweepErrors(stage string) float64 {
	return metricValue("sandbox_sweep_errors_total", map[string]string{"stage": stage})
}

var _ = Describe("Orphan sweep", func() {
	var (
		host *engineSim
		ns   string
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
	})

	It("reaps the containers of a Sandbox whose finalizer was removed by force, after the grace period and not before", func() {
		const grace = 3 * time.Second
		startManager(host, lifetimeOptions(grace)) // the ticker (60s) plays no part: the deletion triggers the sweep
		sb := newSandbox(ns, "forced", "forced-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		uid := string(get(sb).UID)
		var names []string
		youngest := time.Time{}
		for _, c := range containersOf(host, sb) {
			names = append(names, c.Name)
			full, _ := host.Peek(c.ID)
			if full.CreatedAt.After(youngest) {
				youngest = full.CreatedAt
			}
		}
		Expect(names).To(HaveLen(2))
		before := reaped("uid")

		By("deleting the Sandbox while teardown cannot proceed, and removing its finalizer by hand")
		clear := host.Inject(fake.Fault{Verb: fake.VerbRemove, Err: dd.ErrUnavailable})
		DeferCleanup(clear)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Deleting"))
		forced := get(sb)
		patch := client.MergeFrom(forced.DeepCopy())
		forced.Finalizers = nil
		Expect(k8sClient.Patch(ctx, forced, patch)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		clear()
		Expect(time.Now()).To(BeTemporally("<", youngest.Add(grace-time.Second)), "the test must start inside the grace period")

		By("leaving them alone for the grace period, then removing them with their volumes")
		for _, name := range names {
			at := whenGone(host, name, grace+5*time.Second)
			Expect(at).To(BeTemporally(">=", youngest.Add(grace)), "%s reaped before the grace period", name)
		}
		Expect(containersByUID(host, uid)()).To(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
		Expect(reaped("uid")).To(Equal(before + 2))
	})

	It("reaps a legacy container only once its owner container is gone", func() {
		const grace = 2 * time.Second
		startManager(host, sweepOptions(grace))
		seedOwner(host, "roboco-agent-legacy-1")
		seedLegacy(host, "roboco-sandbox-pg-legacy-1", "roboco-agent-legacy-1")
		before := reaped("legacy")
		passes := metricValue("sandbox_sweep_duration_seconds", nil)

		By("keeping it, older than the grace period, while its owner runs")
		Consistently(exists(host, "roboco-sandbox-pg-legacy-1"), grace+2*time.Second).Should(BeTrue())
		Expect(metricValue("sandbox_sweep_duration_seconds", nil)).To(BeNumerically(">=", passes+2), "the sweep must have run meanwhile")

		By("removing it a grace period after its owner is gone")
		Expect(host.DeleteContainer("roboco-agent-legacy-1")).To(Succeed())
		removed := time.Now()
		at := whenGone(host, "roboco-sandbox-pg-legacy-1", grace+5*time.Second)
		Expect(at.Sub(removed)).To(BeNumerically(">=", grace), "an owner restarting within the grace period must not lose its sandbox")
		Expect(reaped("legacy")).To(Equal(before + 1))
		Expect(host.Volumes()).To(BeEmpty())
	})

	It("keeps a legacy container whose owner restarts within the grace period", func() {
		const grace = 3 * time.Second
		startManager(host, sweepOptions(grace))
		seedOwner(host, "roboco-agent-legacy-2")
		seedLegacy(host, "roboco-sandbox-pg-legacy-2", "roboco-agent-legacy-2")
		Consistently(exists(host, "roboco-sandbox-pg-legacy-2"), grace).Should(BeTrue())
		Expect(host.ExitContainer("roboco-agent-legacy-2", 0, 0)).To(Succeed())
		Expect(host.DeleteContainer("roboco-agent-legacy-2")).To(Succeed())
		seedOwner(host, "roboco-agent-legacy-2")
		Consistently(exists(host, "roboco-sandbox-pg-legacy-2"), grace+2*time.Second).Should(BeTrue())
	})

	It("never reaps a live Sandbox's containers, even when its agentID matches an orphan's owner label", func() {
		const grace = 2 * time.Second
		startManager(host, sweepOptions(grace))
		sb := newSandbox(ns, "live", "live-1", "postgres", "redis") // owner roboco-agent-live-1 does not exist
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		ids := containerIDs(host, sb)
		for _, c := range containersOf(host, sb) {
			Expect(c.Labels).To(HaveKeyWithValue(shost.LabelOwner, "roboco-agent-live-1"))
		}
		seedLegacy(host, "roboco-sandbox-pg-old-live-1", "roboco-agent-live-1")
		seedOrphan(host, "roboco-sandbox-redis-old-live-1", ns, "live", string(uuid.NewUUID())) // a previous incarnation

		whenGone(host, "roboco-sandbox-pg-old-live-1", grace+5*time.Second)
		whenGone(host, "roboco-sandbox-redis-old-live-1", grace+5*time.Second)
		Consistently(func() []string { return containerIDs(host, sb) }, 2*time.Second).Should(ConsistOf(ids))
		got := get(sb)
		Expect(condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		for _, s := range got.Status.Services {
			Expect(s.Restarts).To(BeZero())
		}
	})

	It("removes nothing while listing fails or the event stream is behind, and says so", func() {
		const grace = time.Second
		startManager(host, sweepOptions(grace))
		Eventually(func() float64 { return metricValue("sandbox_sweep_duration_seconds", nil) }).Should(BeNumerically(">", 0))

		By("failing the container list: nothing is removed, however old")
		listErrors := sweepErrors("list-containers")
		clearList := host.Inject(fake.Fault{Verb: fake.VerbList, Err: dd.ErrUnavailable})
		DeferCleanup(clearList)
		seedOrphan(host, "roboco-sandbox-redis-lost-1", ns, "lost", string(uuid.NewUUID()))
		seedLegacy(host, "roboco-sandbox-pg-lost-2", "roboco-agent-lost-2")
		host.ResetCalls()
		Consistently(func() bool {
			return exists(host, "roboco-sandbox-redis-lost-1")() && exists(host, "roboco-sandbox-pg-lost-2")()
		}, 3*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbRemove)).To(BeZero())
		Expect(sweepErrors("list-containers")).To(BeNumerically(">", listErrors))

		By("failing the owner's inspect: still nothing, not even the UID orphan")
		inspectErrors := sweepErrors("inspect-owner")
		clearInspect := host.Inject(fake.Fault{Verb: fake.VerbInspect, Ref: "roboco-agent-lost-2", Err: dd.ErrUnavailable})
		DeferCleanup(clearInspect)
		clearList()
		Eventually(func() float64 { return sweepErrors("inspect-owner") }).Should(BeNumerically(">", inspectErrors))
		Consistently(exists(host, "roboco-sandbox-redis-lost-1"), 2*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbRemove)).To(BeZero())

		By("breaking the event stream: still nothing until it resyncs")
		eventErrors := sweepErrors("events")
		host.DropEvents()
		clearInspect()
		Eventually(func() float64 { return sweepErrors("events") }).Should(BeNumerically(">", eventErrors))
		Consistently(exists(host, "roboco-sandbox-redis-lost-1"), 2*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbRemove)).To(BeZero())

		By("reaping both once everything answers")
		host.RestoreEvents()
		whenGone(host, "roboco-sandbox-redis-lost-1", 10*time.Second)
		whenGone(host, "roboco-sandbox-pg-lost-2", 10*time.Second)
	})

	It("never judges another control plane's containers when several share a host", func() {
		const grace = time.Second
		opts := sweepOptions(grace)
		opts.Instance = "mine"
		startManager(host, opts)
		// Another instance's container: its UID means nothing to our API server.
		theirs := seedOrphan(host, "roboco-sandbox-redis-theirs-1", ns, "theirs", string(uuid.NewUUID()))
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-mine-1", Image: "redis:8-alpine", Labels: map[string]string{
			shost.LabelSandbox: "1", shost.LabelUID: string(uuid.NewUUID()), shost.LabelInstance: "mine",
			shost.LabelNamespace: ns, shost.LabelName: "mine"}}, true)
		Expect(err).NotTo(HaveOccurred())
		whenGone(host, "roboco-sandbox-redis-mine-1", grace+5*time.Second)
		Consistently(exists(host, theirs.Name), 2*time.Second).Should(BeTrue())
	})

	It("judges only the containers its selector names", func() {
		const grace = time.Second
		opts := sweepOptions(grace)
		opts.SweepSelector = map[string]string{"sandbox.roboco.io/test-run": "mine"}
		startManager(host, opts)
		foreign := seedOrphan(host, "roboco-sandbox-redis-theirs-1", ns, "theirs", string(uuid.NewUUID()))
		seedLegacy(host, "roboco-sandbox-pg-theirs-2", "roboco-agent-theirs-2")
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-mine-1", Image: "redis:8-alpine", Labels: map[string]string{
			shost.LabelSandbox: "1", shost.LabelUID: string(uuid.NewUUID()), shost.LabelInstance: suiteInstance(),
			"sandbox.roboco.io/test-run": "mine"}}, true)
		Expect(err).NotTo(HaveOccurred())
		whenGone(host, "roboco-sandbox-redis-mine-1", grace+5*time.Second)
		Consistently(func() bool {
			return exists(host, foreign.Name)() && exists(host, "roboco-sandbox-pg-theirs-2")()
		}, 2*time.Second).Should(BeTrue())
	})

	It("costs one container list per pass, plus one inspect per legacy owner, with 200 labelled containers", func() {
		const grace = time.Hour // nothing comes of age: the cost of looking
		opts := lifetimeOptions(grace)
		opts.SweepInterval = 500 * time.Millisecond
		for i := range 150 {
			seedOrphan(host, fmt.Sprintf("roboco-sandbox-redis-bulk-%d", i), ns, fmt.Sprintf("bulk-%d", i), string(uuid.NewUUID()))
		}
		for i := range 50 {
			seedLegacy(host, fmt.Sprintf("roboco-sandbox-pg-bulk-%d", i), fmt.Sprintf("roboco-agent-bulk-%d", i%10))
		}
		startManager(host, opts)
		Eventually(func() float64 { return metricValue("sandbox_sweep_duration_seconds", nil) }).Should(BeNumerically(">", 0))
		host.ResetCalls()
		passes := metricValue("sandbox_sweep_duration_seconds", nil)
		Eventually(func() float64 { return metricValue("sandbox_sweep_duration_seconds", nil) }, "10s").Should(BeNumerically(">=", passes+5))
		n := metricValue("sandbox_sweep_duration_seconds", nil) - passes
		lists, inspects, removes := float64(host.Calls(fake.VerbList)), float64(host.Calls(fake.VerbInspect)), host.Calls(fake.VerbRemove)
		AddReportEntry("sweep cost (fake, 200 containers)", fmt.Sprintf("%.1f lists, %.1f inspects per pass over %.0f passes", lists/n, inspects/n, n))
		Expect(lists / n).To(BeNumerically("~", 1, 0.3))
		Expect(inspects / n).To(BeNumerically("~", 10, 3)) // the 10 legacy owners
		Expect(removes).To(BeZero())
	})
})
