package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
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
		host *engineSim
		ns   string
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
	})

	// wedge makes the service's container dead and unremovable, and waits until the
	// service is Ready again from another container: it returns the dead one's ID,
	// the service's container name and what lets Docker remove the dead one.
	wedge := func(sb *sandboxv1.Sandbox) (deadID, name string, release func()) {
		svc := waitReady(sb).Status.Services[0]
		release, err := host.WedgeRemoval(svc.ContainerID)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(release)
		Eventually(func(g Gomega) {
			got := get(sb)
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1.ConditionReady)).To(BeTrue())
			g.Expect(got.Status.Services[0].ContainerID).NotTo(Equal(svc.ContainerID))
		}).Should(Succeed(), "the service must come back while the dead container cannot be removed")
		return svc.ContainerID, svc.ContainerName, release
	}

	It("renames it aside, serves the service from a new container, and removes the dead one once Docker can", func() {
		startManager(host, testOptions())
		sb := newSandbox(ns, "wedged", "wedged-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		deadID, name, release := wedge(sb)

		By("holding the service's name with the new container, the dead one renamed aside")
		aside := name + "-dead-" + dd.ShortID(deadID)
		got := get(sb).Status.Services[0]
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
		Eventually(eventReasons(sb)).Should(ContainElement(sandboxv1.EventSetAside))

		By("trying to remove the dead one again, in the background, while the service stays Ready")
		removals := host.Calls(fake.VerbRemove)
		Eventually(func() int { return host.Calls(fake.VerbRemove) }, asideWait).Should(BeNumerically(">", removals))
		Expect(exists(host, deadID)()).To(BeTrue())
		Expect(condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))

		By("removing the dead one once Docker can, the service untouched")
		release()
		Eventually(func() []string { return containerIDs(host, sb) }, asideWait).Should(Equal([]string{current.ID}))
		Eventually(eventReasons(sb)).Should(ContainElement(sandboxv1.EventAsideRemoved))
		Expect(condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		Expect(get(sb).Status.Services[0].ContainerID).To(Equal(current.ID))
	})
})
