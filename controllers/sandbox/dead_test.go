package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// asideWait covers the backoff of the retries that remove a container set aside
// (or tear a Sandbox down) once Docker can: a few failed attempts, doubling from 1s.
const asideWait = 45 * time.Second

// A daemon restart during a container's exit can leave it dead with its root
// filesystem mounted: Docker then refuses every removal (the chaos run's cycle 46).
var _ = Describe("A dead container Docker cannot remove", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
	})

	// wedge makes the service's container dead and unremovable, and waits until the
	// service is Ready again from another container: it returns the dead one's ID,
	// the service's container name and what lets Docker remove the dead one.
	wedge := func(sb *sandboxv1.Sandbox) (deadID, name string, release func()) {
		svc := ct.WaitReady(sb).Status.Services[0]
		release, err := host.WedgeRemoval(svc.ContainerID)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(release)
		Eventually(func(g Gomega) {
			got := ct.Get(sb)
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1.ConditionReady)).To(BeTrue())
			g.Expect(got.Status.Services[0].ContainerID).NotTo(Equal(svc.ContainerID))
		}).Should(Succeed(), "the service must come back while the dead container cannot be removed")
		return svc.ContainerID, svc.ContainerName, release
	}

	It("renames it aside, serves the service from a new container, and removes the dead one once Docker can", func() {
		ct.StartManager(host, ct.TestOptions())
		sb := ct.NewSandbox(ns, "wedged", "wedged-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		deadID, name, release := wedge(sb)

		By("holding the service's name with the new container, the dead one renamed aside")
		aside := name + "-dead-" + dd.ShortID(deadID)
		got := ct.Get(sb).Status.Services[0]
		Expect(got.ContainerName).To(Equal(name))
		Expect(got.Restarts).To(BeNumerically(">=", 1))
		current, ok := host.Peek(name)
		Expect(ok).To(BeTrue())
		Expect(current.ID).To(Equal(got.ContainerID))
		Expect(current.State).To(Equal(dd.StateRunning))
		dead, ok := host.Peek(deadID)
		Expect(ok).To(BeTrue())
		Expect(dead.Name).To(Equal(aside))
		Expect(dead.State).To(Equal(dd.StateDead))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventSetAside))

		By("trying to remove the dead one again, in the background, while the service stays Ready")
		removals := host.Calls(fake.VerbRemove)
		Eventually(func() int { return host.Calls(fake.VerbRemove) }, asideWait).Should(BeNumerically(">", removals))
		Expect(ct.Exists(host, deadID)()).To(BeTrue())
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))

		By("removing the dead one once Docker can, the service untouched")
		release()
		Eventually(func() []string { return ct.ContainerIDs(host, sb) }, asideWait).Should(Equal([]string{current.ID}))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventAsideRemoved))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		Expect(ct.Get(sb).Status.Services[0].ContainerID).To(Equal(current.ID))
	})

	It("keeps a deleted Sandbox's finalizer, saying what blocks it, until the dead container is gone", func() {
		ct.StartManager(host, ct.TestOptions())
		sb := ct.NewSandbox(ns, "wedgedel", "wedgedel-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		deadID, _, release := wedge(sb)
		uid := string(ct.Get(sb).UID)

		By("deleting the Sandbox while the dead container cannot be removed")
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReconciling)).Should(Equal("True/" + sandboxv1.ReasonTeardownBlocked))
		msg := ct.ConditionOf(sb, sandboxv1.ConditionReconciling).Message
		Expect(msg).To(And(ContainSubstring(dd.ShortID(deadID)), ContainSubstring("device or resource busy")))
		Expect(ct.Get(sb).Finalizers).To(ContainElement(ct.Finalizer))
		Expect(ct.ContainersByUID(host, uid)()).To(HaveLen(1), "the live container goes; the dead one stays")
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventTeardownBlocked))

		By("letting it go once the dead container is removed, leaving nothing")
		release()
		Eventually(ct.Gone(sb), asideWait).Should(BeTrue())
		Expect(ct.ContainersByUID(host, uid)()).To(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
	})

	It("is reaped by the sweep, as the Sandbox's by its labels, once the Sandbox went without its teardown", func() {
		const grace = time.Second
		ct.StartManager(host, ct.SweepOptions(grace))
		sb := ct.NewSandbox(ns, "wedgedsweep", "wedgedsweep-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		deadID, _, release := wedge(sb)
		uid := string(ct.Get(sb).UID)
		before := ct.Reaped("uid")

		By("removing the Sandbox's finalizer by hand while the dead container cannot be removed")
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReconciling)).Should(Equal("True/" + sandboxv1.ReasonTeardownBlocked))
		forced := ct.Get(sb)
		patch := client.MergeFrom(forced.DeepCopy())
		forced.Finalizers = nil
		Expect(k8sClient.Patch(ctx, forced, patch)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())

		By("reaping it once Docker can remove it")
		release()
		Eventually(ct.Exists(host, deadID), asideWait).Should(BeFalse())
		Expect(ct.ContainersByUID(host, uid)()).To(BeEmpty())
		Expect(ct.Reaped("uid")).To(BeNumerically(">", before))
	})
})
