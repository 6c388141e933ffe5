package sandbox_test

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
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

var _ = Describe("Names and labels within Kubernetes' bounds", func() {
	var (
		host *ct.EngineSim
		ns   string
		stop func()
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		stop = ct.StartManager(host, ct.TestOptions())
	})

	It("provisions a Sandbox whose name is longer than a label value (the CRD allows 245 characters)", func() {
		name := "long-" + strings.Repeat("n", 240)
		sb := ct.NewSandbox(ns, name, "long-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Expect(ct.SecretOf(sb)).To(HaveKey("ROBOCO_TEST_REDIS_PASSWORD"))

		By("re-making its Secret at once when it is deleted by hand (the manager's cache still sees it)")
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-sandbox"}})).To(Succeed())
		Eventually(ct.EventReasons(sb)).Should(ContainElement("SecretRecreated"))
		ct.WaitReady(sb)
	})

	It("keeps using a Secret labelled by the previous release (label value: the Sandbox's name) after an upgrade", func() {
		sb := ct.NewSandbox(ns, "old-label", "old-label-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		container := ct.WaitReady(sb).Status.Services[0].ContainerID
		stop()

		By("labelling its Secret as the previous release did, then starting the new manager")
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, ct.KeyOf(ns, "old-label-sandbox"), secret)).To(Succeed())
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Labels = map[string]string{ct.SecretLabel: sb.Name}
		Expect(k8sClient.Patch(ctx, secret, patch)).To(Succeed())
		password := ct.SecretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]
		ct.StartManager(host, ct.TestOptions())
		got := ct.Get(sb)
		got.Spec.TTL = &metav1.Duration{Duration: time.Hour} // a new generation: the new manager has looked
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() int64 { return ct.Get(sb).Status.ObservedGeneration }).Should(Equal(got.Generation))
		Expect(ct.WaitReady(sb).Status.Services[0].ContainerID).To(Equal(container))
		Expect(ct.SecretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]).To(Equal(password))

		By("still seeing it deleted by hand at once, and deleting it with the Sandbox")
		Expect(k8sClient.Delete(ctx, secret)).To(Succeed())
		Eventually(ct.EventReasons(sb)).Should(ContainElement("SecretRecreated"))
		ct.WaitReady(sb)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, ct.KeyOf(ns, "old-label-sandbox"), &corev1.Secret{}))).To(BeTrue())
	})
})

var _ = Describe("The operator's bounds, judged at run time", func() {
	It("stalls on a network the operator does not allow, naming the allowed ones, and recovers when allowed", func() {
		host := ct.NewHost()
		host.AddNetwork("payments-db")
		stop := ct.StartManager(host, ct.TestOptions())
		sb := ct.NewSandbox(ct.NewNamespace(), "net", "net-1", "redis")
		sb.Spec.Network = "payments-db"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(And(
			ContainSubstring(`network "payments-db" is not allowed`), ContainSubstring(ct.TestNetwork), ContainSubstring("--allowed-networks")))
		Expect(ct.ContainersOf(host, sb)).To(BeEmpty())

		By("joining it once the operator allows it")
		stop()
		opts := ct.TestOptions()
		opts.AllowedNetworks = []string{"payments-db"}
		ct.StartManager(host, opts)
		got := ct.WaitReady(sb)
		c, _ := host.Peek(got.Status.Services[0].ContainerID)
		Expect(c.Networks).To(HaveKey("payments-db"))
	})

	It("stalls on cpu above the Docker host's CPU count, naming the allowed range, and recovers when lowered", func() {
		host := ct.NewHost(fake.WithCPUs(2))
		ct.StartManager(host, ct.TestOptions()) // --max-cpu 4: the host is the tighter bound
		sb := ct.NewSandbox(ct.NewNamespace(), "cpus", "cpus-1", "postgres")
		three := resource.MustParse("3")
		sb.Spec.Services[0].Resources = &sandboxv1.ServiceResources{CPU: &three}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(And(
			ContainSubstring("asks for cpu 3"), ContainSubstring("allowed: 10m to 2"), ContainSubstring("2 CPUs")))
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())

		By("recovering when the spec is fixed")
		fixed := ct.Get(sb)
		two := resource.MustParse("2")
		fixed.Spec.Services[0].Resources.CPU = &two
		Expect(k8sClient.Update(ctx, fixed)).To(Succeed())
		ct.WaitReady(sb)
	})
})
