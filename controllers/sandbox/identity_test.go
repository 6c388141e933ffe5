package controllers_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// hostID is the identity a fake host proves (planting it when needed).
func hostID(host *engineSim) dd.HostIdentity {
	id, err := host.HostIdentity(ctx)
	if errors.Is(err, dd.ErrNotFound) {
		ExpectWithOffset(1, host.PlantHostIdentity(ctx, string(uuid.NewUUID()))).To(Succeed())
		id, err = host.HostIdentity(ctx)
	}
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return id
}

func boundTo(sb *sandboxv1.Sandbox) string {
	if h := get(sb).Status.DockerHost; h != nil {
		return h.ID
	}
	return ""
}

var _ = Describe("The Docker host's identity", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("binds a Sandbox to the host it is provisioned on, and keeps it there through a daemon restart and a prune", func() {
		host := newHost()
		DeferCleanup(startManager(host, testOptions()))
		sb := newSandbox(ns, "bound", "bound-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := waitReady(sb)
		want := hostID(host)
		Expect(got.Status.DockerHost).To(Equal(&sandboxv1.DockerHostStatus{ID: want.ID, DaemonID: want.DaemonID, Name: want.Name}))

		By("restarting the daemon: its containers stop, the identity stays, the Sandbox is recreated there")
		host.RestartDaemon()
		Eventually(func() int32 { return waitReady(sb).Status.Services[0].Restarts }).Should(BeNumerically(">=", 1))
		Expect(boundTo(sb)).To(Equal(want.ID))

		By("docker system prune --volumes: the identity stays")
		host.Prune(false)
		host.RestartDaemon() // the stream breaks, so the identity is read again
		Eventually(func() int32 { return waitReady(sb).Status.Services[0].Restarts }).Should(BeNumerically(">=", 2))
		Expect(boundTo(sb)).To(Equal(want.ID))
		Expect(host.Calls(fake.VerbPlantIdentity)).To(Equal(1))
	})

	It("does nothing for a Sandbox of another host with the same daemon ID, says so, and holds its teardown until released", func() {
		const grace = time.Second
		hostA := newHost()
		seedOwner(hostA, "roboco-agent-moved-1")
		stopA := startManager(hostA, lifetimeOptions(grace))
		sb := ownedSandbox(ns, "moved", "moved-1", grace, "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		stopA()
		a := hostID(hostA)

		By("rescheduling the manager onto host B, whose daemon reports the same ID")
		hostB := newHost()
		DeferCleanup(startManager(hostB, lifetimeOptions(grace)))
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/WrongDockerHost"))
		b := hostID(hostB)
		Expect(b.DaemonID).To(Equal(a.DaemonID))
		Expect(b.ID).NotTo(Equal(a.ID))
		msg := conditionOf(sb, sandboxv1.ConditionReady).Message
		Expect(msg).To(ContainSubstring(a.ID))
		Expect(msg).To(ContainSubstring(b.ID))
		Expect(condition(sb, sandboxv1.ConditionStalled)()).To(Equal("True/WrongDockerHost"))
		Expect(condition(sb, sandboxv1.ConditionOwnerAlive)()).To(Equal("Unknown/WrongDockerHost"))

		By("no container made on B, and the owner missing on B deletes nothing, well past the grace period")
		Consistently(func() bool { return deleting(sb) }, 4*grace).Should(BeFalse())
		Expect(hostB.Calls(fake.VerbCreateContainer)).To(BeZero())
		Expect(get(sb).Status.OwnerMissingSince).To(BeNil())
		Expect(boundTo(sb)).To(Equal(a.ID))

		By("deleting it: the finalizer stays, since its containers on A cannot be confirmed gone")
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(func() string { return conditionOf(sb, sandboxv1.ConditionReady).Message }).Should(ContainSubstring(sandboxv1.AnnotationReleaseDockerHost))
		Consistently(gone(sb), 2*time.Second).Should(BeFalse())
		Expect(hostB.Calls(fake.VerbRemove)).To(BeZero())
		Expect(containersOf(hostA, sb)).To(HaveLen(2), "host A's containers were touched")

		By("releasing it with the bound host's id: it goes, without a teardown")
		patch := client.MergeFrom(get(sb))
		released := get(sb)
		released.Annotations = map[string]string{sandboxv1.AnnotationReleaseDockerHost: a.ID}
		Expect(k8sClient.Patch(ctx, released, patch)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		Expect(hostB.Calls(fake.VerbRemove)).To(BeZero())
		Eventually(eventReasons(sb)).Should(ContainElement(sandboxv1.EventDockerHostReleased))
	})

	It("creates, removes and sweeps nothing while the host cannot be proven", func() {
		const grace = time.Second
		host := newHost()
		clear := host.Inject(fake.Fault{Verb: fake.VerbHostIdentity, Err: errors.New("permission denied reading images")})
		DeferCleanup(clear)
		DeferCleanup(startManager(host, sweepOptions(grace)))
		orphan := seedOrphan(host, "roboco-sandbox-redis-unproven-9", ns, "unproven-9", string(uuid.NewUUID()))
		sb := newSandbox(ns, "unproven", "unproven-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostUnproven"))
		Expect(conditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("permission denied reading images"))
		errs := sweepErrors("identity")
		Eventually(func() float64 { return sweepErrors("identity") }, 3*grace).Should(BeNumerically(">", errs))
		Consistently(exists(host, orphan.Name), 3*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())
		Expect(host.Calls(fake.VerbPlantIdentity)).To(BeZero())
		Expect(get(sb).Status.DockerHost).To(BeNil())

		By("once the host answers, the Sandbox is bound and provisioned, and the orphan reaped")
		clear()
		waitReady(sb)
		Expect(boundTo(sb)).To(Equal(hostID(host).ID))
		whenGone(host, orphan.Name, 10*time.Second)
	})
})
