package controllers_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
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
