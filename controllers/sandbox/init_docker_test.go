package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

var _ = Describe("Init scripts on the real Docker engine", Label("docker"), func() {
	It("stops a seed past its init.timeout, naming the limit, and seeds a new container once it may take longer", func() {
		rd := ct.NewRealDocker()
		driver, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(driver.Close)
		ct.StartManager(driver, ct.RealOptions(rd, time.Minute))
		ns := ct.NewNamespace()

		By("a script that blocks 4s in a seed that may take 2s")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
			Data: map[string]string{"10-wait.redis": "BLPOP never 4", "20-keys.redis": "SET greeting hello"}}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		sb := ct.Seeded(ct.NewSandbox(ns, "slow-seed", "seed-"+rd.RunID, "redis"), "seed")
		sb.Spec.Services[0].Init.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady), 2*time.Minute, 200*time.Millisecond).Should(Equal("False/InitFailed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(ContainSubstring(
			"10-wait.redis: stopped at the seed's total time of 2s (" + engine.InitPastTotal + ")"))
		Expect(ct.Condition(sb, sandboxv1.ConditionStalled)()).To(Equal("True/InitFailed"))
		failed := ct.Get(sb).Status.Services[0].ContainerID
		Expect(failed).NotTo(BeEmpty())

		By("letting it take a minute")
		Eventually(func() error {
			cur := ct.Get(sb)
			cur.Spec.Services[0].Init.Timeout = &metav1.Duration{Duration: time.Minute}
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 2*time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
		Expect(ct.Get(sb).Status.Services[0].ContainerID).NotTo(Equal(failed), "the seed ran again on the container it was stopped in")
		uid := string(ct.Get(sb).UID)
		Expect(rd.List(map[string]string{shost.LabelUID: uid})).To(HaveLen(1))

		ct.DeletedGoes(sb)
		Eventually(func() []string { return rd.List(map[string]string{shost.LabelUID: uid}) }, time.Minute).Should(BeEmpty())
	})
})
