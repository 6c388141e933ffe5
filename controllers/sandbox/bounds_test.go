package controllers_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

var _ = Describe("Names and labels within Kubernetes' bounds", func() {
	var (
		host *engineSim
		ns   string
		stop func()
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
		stop = startManager(host, testOptions())
	})

	It("provisions a Sandbox whose name is longer than a label value (the CRD allows 245 characters)", func() {
		name := "long-" + strings.Repeat("n", 240)
		sb := newSandbox(ns, name, "long-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Expect(secretOf(sb)).To(HaveKey("ROBOCO_TEST_REDIS_PASSWORD"))

		By("re-making its Secret at once when it is deleted by hand (the manager's cache still sees it)")
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-sandbox"}})).To(Succeed())
		Eventually(eventReasons(sb)).Should(ContainElement("SecretRecreated"))
		waitReady(sb)
	})

	It("keeps using a Secret labelled by the previous release (label value: the Sandbox's name) after an upgrade", func() {
		sb := newSandbox(ns, "old-label", "old-label-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		container := waitReady(sb).Status.Services[0].ContainerID
		stop()

		By("labelling its Secret as the previous release did, then starting the new manager")
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, keyOf(ns, "old-label-sandbox"), secret)).To(Succeed())
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Labels = map[string]string{controllers.SecretLabel: sb.Name}
		Expect(k8sClient.Patch(ctx, secret, patch)).To(Succeed())
		password := secretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]
		startManager(host, testOptions())
		got := get(sb)
		got.Spec.TTL = &metav1.Duration{Duration: time.Hour} // a new generation: the new manager has looked
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() int64 { return get(sb).Status.ObservedGeneration }).Should(Equal(got.Generation))
		Expect(waitReady(sb).Status.Services[0].ContainerID).To(Equal(container))
		Expect(secretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]).To(Equal(password))

		By("still seeing it deleted by hand at once, and deleting it with the Sandbox")
		Expect(k8sClient.Delete(ctx, secret)).To(Succeed())
		Eventually(eventReasons(sb)).Should(ContainElement("SecretRecreated"))
		waitReady(sb)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, keyOf(ns, "old-label-sandbox"), &corev1.Secret{}))).To(BeTrue())
	})
})

var _ = Describe("The operator's bounds, judged at run time", func() {
	It("stalls on a network the operator does not allow, naming the allowed ones, and recovers when allowed", func() {
		host := newHost()
		host.AddNetwork("payments-db")
		stop := startManager(host, testOptions())
		sb := newSandbox(newNamespace(), "net", "net-1", "redis")
		sb.Spec.Network = "payments-db"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(conditionOf(sb, sandboxv1.ConditionStalled).Message).To(And(
			ContainSubstring(`network "payments-db" is not allowed`), ContainSubstring(testNetwork), ContainSubstring("--allowed-networks")))
		Expect(containersOf(host, sb)).To(BeEmpty())

		By("joining it once the operator allows it")
		stop()
		opts := testOptions()
		opts.AllowedNetworks = []string{"payments-db"}
		startManager(host, opts)
		got := waitReady(sb)
		c, _ := host.Peek(got.Status.Services[0].ContainerID)
		Expect(c.Networks).To(HaveKey("payments-db"))
	})

	It("stalls on cpu above the Docker host's CPU count, naming the allowed range, and recovers when lowered", func() {
		host := newHost(fake.WithCPUs(2))
		startManager(host, testOptions()) // --max-cpu 4: the host is the tighter bound
		sb := newSandbox(newNamespace(), "cpus", "cpus-1", "postgres")
		three := resource.MustParse("3")
		sb.Spec.Services[0].Resources = &sandboxv1.ServiceResources{CPU: &three}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(conditionOf(sb, sandboxv1.ConditionStalled).Message).To(And(
			ContainSubstring("asks for cpu 3"), ContainSubstring("allowed: 10m to 2"), ContainSubstring("2 CPUs")))
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())

		By("recovering when the spec is fixed")
		fixed := get(sb)
		two := resource.MustParse("2")
		fixed.Spec.Services[0].Resources.CPU = &two
		Expect(k8sClient.Update(ctx, fixed)).To(Succeed())
		waitReady(sb)
	})
})
