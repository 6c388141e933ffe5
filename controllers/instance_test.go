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
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var _ = Describe("Control planes sharing a Docker host", func() {
	It("never judge each other's containers when both are left at the default instance", func() {
		const grace = time.Second
		host := newHost()
		startManager(host, sweepOptions(grace))
		mine := newSandbox(newNamespace(), "mine", "shared-1", "redis")
		Expect(k8sClient.Create(ctx, mine)).To(Succeed())
		container := waitReady(mine).Status.Services[0].ContainerName

		By("starting a second cluster's manager on the same host, with the same agentID")
		other, err := testenv.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(other.Stop)
		otherClient, err := client.New(other.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		startManagerOn(other.Config, host, sweepOptions(grace))
		Expect(otherClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents"}})).To(Succeed())
		theirs := newSandbox("agents", "theirs", "shared-1", "redis")
		Expect(otherClient.Create(ctx, theirs)).To(Succeed())
		Eventually(func() string {
			got := &sandboxv1.Sandbox{}
			Expect(otherClient.Get(ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed())
			return stalledMessage(got)
		}).Should(ContainSubstring("of another control plane"))

		By("leaving the first cluster's container alone, past the grace period and several sweeps")
		Consistently(exists(host, container), 3*grace+2*time.Second).Should(BeTrue())
		Expect(condition(mine, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		Expect(eventReasons(mine)()).NotTo(ContainElement("Recreated"))
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
		host *engineSim
		ns   string
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
	})

	It("adopts the containers it made, with their credentials, and tears them down", func() {
		previous := testOptions()
		previous.Instance = "default"
		stop := startManager(host, previous)
		sb := newSandbox(ns, "upgrade", "upgrade-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		before := waitReady(sb)
		secret := secretOf(sb)
		stop()

		startManager(host, testOptions()) // the new default: this cluster's own instance
		got := get(sb)
		got.Spec.TTL = &metav1.Duration{Duration: time.Hour} // a new generation: the new manager has looked
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() int64 { return get(sb).Status.ObservedGeneration }).Should(Equal(got.Generation))
		after := waitReady(sb)
		for i := range before.Status.Services {
			Expect(after.Status.Services[i].ContainerID).To(Equal(before.Status.Services[i].ContainerID))
		}
		Expect(secretOf(sb)).To(Equal(secret))

		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		Expect(containersByUID(host, string(before.UID))()).To(BeEmpty())
	})

	It("sweeps its orphans, and frees names they hold, only once the operator lists \"default\" as a legacy instance", func() {
		const grace = time.Second
		orphan := seedOrphanOf(host, "default", "roboco-sandbox-redis-gone-1", ns, "gone", string(uuid.NewUUID()))
		stop := startManager(host, sweepOptions(grace))
		sb := newSandbox(ns, "gone-again", "gone-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(conditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("--legacy-instances"))
		Consistently(exists(host, orphan.Name), 3*grace).Should(BeTrue())
		stop()

		opts := sweepOptions(grace)
		opts.LegacyInstances = []string{"default"}
		startManager(host, opts)
		got := get(sb)
		got.Spec.TTL = &metav1.Duration{Duration: time.Hour} // a Stalled Sandbox waits for a change
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		waitReady(sb)
		Expect(get(sb).Status.Services[0].ContainerID).NotTo(Equal(orphan.ID))
		lonely := seedOrphanOf(host, "default", "roboco-sandbox-redis-lonely-1", ns, "lonely", string(uuid.NewUUID()))
		whenGone(host, lonely.Name, grace+5*time.Second)
	})
})
