package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var _ = Describe("Control planes sharing a Docker host", func() {
	It("never judge each other's containers when both are left at the default instance", func() {
		const grace = time.Second
		host := ct.NewHost()
		ct.StartManager(host, ct.SweepOptions(grace))
		mine := ct.NewSandbox(ct.NewNamespace(), "mine", "shared-1", "redis")
		Expect(k8sClient.Create(ctx, mine)).To(Succeed())
		container := ct.WaitReady(mine).Status.Services[0].ContainerName

		By("starting a second cluster's manager on the same host, with the same agentID")
		other, err := testenv.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(other.Stop)
		otherClient, err := client.New(other.Config, client.Options{Scheme: ct.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		ct.StartManagerOn(other.Config, host, ct.SweepOptions(grace))
		Expect(otherClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents"}})).To(Succeed())
		theirs := ct.NewSandbox("agents", "theirs", "shared-1", "redis")
		Expect(otherClient.Create(ctx, theirs)).To(Succeed())
		Eventually(func() string {
			got := &sandboxv1.Sandbox{}
			Expect(otherClient.Get(ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed())
			return stalledMessage(got)
		}).Should(ContainSubstring("of another control plane"))

		By("leaving the first cluster's container alone, past the grace period and several sweeps")
		Consistently(ct.Exists(host, container), 3*grace+2*time.Second).Should(BeTrue())
		Expect(ct.Condition(mine, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		Expect(ct.EventReasons(mine)()).NotTo(ContainElement("Recreated"))
	})
})

func stalledMessage(sb *sandboxv1.Sandbox) string {
	for _, c := range sb.Status.Conditions {
		if c.Type == sandboxv1.ConditionStalled {
			return c.Message
		}
	}
	return ""
}

var _ = Describe("Upgrading from a release whose instance defaulted to \"default\"", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
	})

	It("adopts the containers it made, with their credentials, and tears them down", func() {
		previous := ct.TestOptions()
		previous.Instance = "default"
		stop := ct.StartManager(host, previous)
		sb := ct.NewSandbox(ns, "upgrade", "upgrade-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		before := ct.WaitReady(sb)
		secret := ct.SecretOf(sb)
		stop()

		ct.StartManager(host, ct.TestOptions()) // the new default: this cluster's own instance
		got := ct.Get(sb)
		got.Spec.TTL = &metav1.Duration{Duration: time.Hour} // a new generation: the new manager has looked
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() int64 { return ct.Get(sb).Status.ObservedGeneration }).Should(Equal(got.Generation))
		after := ct.WaitReady(sb)
		for i := range before.Status.Services {
			Expect(after.Status.Services[i].ContainerID).To(Equal(before.Status.Services[i].ContainerID))
		}
		Expect(ct.SecretOf(sb)).To(Equal(secret))

		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Expect(ct.ContainersByUID(host, string(before.UID))()).To(BeEmpty())
	})

	It("sweeps its orphans, and frees names they hold, only once the operator lists \"default\" as a legacy instance", func() {
		const grace = time.Second
		orphan := ct.SeedOrphanOf(host, "default", "roboco-sandbox-redis-gone-1", ns, "gone", string(uuid.NewUUID()))
		stop := ct.StartManager(host, ct.SweepOptions(grace))
		sb := ct.NewSandbox(ns, "gone-again", "gone-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("--legacy-instances"))
		Consistently(ct.Exists(host, orphan.Name), 3*grace).Should(BeTrue())
		stop()

		opts := ct.SweepOptions(grace)
		opts.LegacyInstances = []string{"default"}
		ct.StartManager(host, opts)
		got := ct.Get(sb)
		got.Spec.TTL = &metav1.Duration{Duration: time.Hour} // a Stalled Sandbox waits for a change
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		ct.WaitReady(sb)
		Expect(ct.Get(sb).Status.Services[0].ContainerID).NotTo(Equal(orphan.ID))
		lonely := ct.SeedOrphanOf(host, "default", "roboco-sandbox-redis-lonely-1", ns, "lonely", string(uuid.NewUUID()))
		ct.WhenGone(host, lonely.Name, grace+5*time.Second)
	})
})
