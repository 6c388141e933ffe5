package sandbox_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// hostID is the identity a fake host proves (planting it when needed).
func hostID(host *ct.EngineSim) dd.HostIdentity {
	id, err := host.HostIdentity(ctx)
	if errors.Is(err, dd.ErrNotFound) {
		ExpectWithOffset(1, host.PlantHostIdentity(ctx, string(uuid.NewUUID()))).To(Succeed())
		id, err = host.HostIdentity(ctx)
	}
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return id
}

func boundTo(sb *sandboxv1.Sandbox) string {
	if h := ct.Get(sb).Status.DockerHost; h != nil {
		return h.ID
	}
	return ""
}

var _ = Describe("The Docker host's identity", func() {
	var ns string
	BeforeEach(func() { ns = ct.NewNamespace() })

	It("binds a Sandbox to the host it is provisioned on, and keeps it there through a daemon restart and a prune", func() {
		host := ct.NewHost()
		DeferCleanup(ct.StartManager(host, ct.TestOptions()))
		sb := ct.NewSandbox(ns, "bound", "bound-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		want := hostID(host)
		Expect(got.Status.DockerHost).To(Equal(&sandboxv1.DockerHostStatus{ID: want.ID, DaemonID: want.DaemonID, Name: want.Name}))

		By("restarting the daemon: its containers stop, the identity stays, the Sandbox is recreated there")
		host.RestartDaemon()
		Eventually(func() int32 { return ct.WaitReady(sb).Status.Services[0].Restarts }).Should(BeNumerically(">=", 1))
		Expect(boundTo(sb)).To(Equal(want.ID))

		By("docker system prune --volumes: the identity stays")
		host.Prune(false)
		host.RestartDaemon() // the stream breaks, so the identity is read again
		Eventually(func() int32 { return ct.WaitReady(sb).Status.Services[0].Restarts }).Should(BeNumerically(">=", 2))
		Expect(boundTo(sb)).To(Equal(want.ID))
		Expect(host.Calls(fake.VerbPlantIdentity)).To(Equal(1))
	})

	It("does nothing for a Sandbox of another host with the same daemon ID, says so, and holds its teardown until released", func() {
		const grace = time.Second
		hostA := ct.NewHost()
		ct.SeedOwner(hostA, "roboco-agent-moved-1")
		stopA := ct.StartManager(hostA, ct.LifetimeOptions(grace))
		sb := ct.OwnedSandbox(ns, "moved", "moved-1", grace, "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		stopA()
		a := hostID(hostA)

		By("rescheduling the manager onto host B, whose daemon reports the same ID")
		hostB := ct.NewHost()
		DeferCleanup(ct.StartManager(hostB, ct.LifetimeOptions(grace)))
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/WrongDockerHost"))
		b := hostID(hostB)
		Expect(b.DaemonID).To(Equal(a.DaemonID))
		Expect(b.ID).NotTo(Equal(a.ID))
		msg := ct.ConditionOf(sb, sandboxv1.ConditionReady).Message
		Expect(msg).To(ContainSubstring(a.ID))
		Expect(msg).To(ContainSubstring(b.ID))
		Expect(ct.Condition(sb, sandboxv1.ConditionStalled)()).To(Equal("True/WrongDockerHost"))
		Expect(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)()).To(Equal("Unknown/WrongDockerHost"))

		By("no container made on B, and the owner missing on B deletes nothing, well past the grace period")
		Consistently(func() bool { return ct.Deleting(sb) }, 4*grace).Should(BeFalse())
		Expect(hostB.Calls(fake.VerbCreateContainer)).To(BeZero())
		Expect(ct.Get(sb).Status.OwnerMissingSince).To(BeNil())
		Expect(boundTo(sb)).To(Equal(a.ID))

		By("deleting it: the finalizer stays, since its containers on A cannot be confirmed gone")
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(func() string { return ct.ConditionOf(sb, sandboxv1.ConditionReady).Message }).Should(ContainSubstring(sandboxv1.AnnotationReleaseDockerHost))
		Consistently(ct.Gone(sb), 2*time.Second).Should(BeFalse())
		Expect(hostB.Calls(fake.VerbRemove)).To(BeZero())
		Expect(ct.ContainersOf(hostA, sb)).To(HaveLen(2), "host A's containers were touched")

		By("releasing it with the bound host's id: it goes, without a teardown")
		patch := client.MergeFrom(ct.Get(sb))
		released := ct.Get(sb)
		released.Annotations = map[string]string{sandboxv1.AnnotationReleaseDockerHost: a.ID}
		Expect(k8sClient.Patch(ctx, released, patch)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Expect(hostB.Calls(fake.VerbRemove)).To(BeZero())
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventDockerHostReleased))
	})

	It("creates, removes and sweeps nothing while the host cannot be proven", func() {
		const grace = time.Second
		host := ct.NewHost()
		clear := host.Inject(fake.Fault{Verb: fake.VerbHostIdentity, Err: errors.New("permission denied reading images")})
		DeferCleanup(clear)
		DeferCleanup(ct.StartManager(host, ct.SweepOptions(grace)))
		orphan := ct.SeedOrphan(host, "roboco-sandbox-redis-unproven-9", ns, "unproven-9", string(uuid.NewUUID()))
		sb := ct.NewSandbox(ns, "unproven", "unproven-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostUnproven"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("permission denied reading images"))
		errs := ct.SweepErrors("identity")
		Eventually(func() float64 { return ct.SweepErrors("identity") }, 3*grace).Should(BeNumerically(">", errs))
		Consistently(ct.Exists(host, orphan.Name), 3*grace).Should(BeTrue())
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())
		Expect(host.Calls(fake.VerbPlantIdentity)).To(BeZero())
		Expect(ct.Get(sb).Status.DockerHost).To(BeNil())

		By("once the host answers, the Sandbox is bound and provisioned, and the orphan reaped")
		clear()
		ct.WaitReady(sb)
		Expect(boundTo(sb)).To(Equal(hostID(host).ID))
		ct.WhenGone(host, orphan.Name, 10*time.Second)
	})
})
