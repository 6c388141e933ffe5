package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

var _ = Describe("Init scripts (spec.services[].init)", func() {
	var (
		sim *ct.EngineSim
		ns  string
	)
	BeforeEach(func() {
		sim = ct.NewHost()
		ns = ct.NewNamespace()
		stop := ct.StartManager(sim, ct.TestOptions())
		DeferCleanup(func() { stop() })
	})

	It("waits for a missing ConfigMap, naming it, and starts once it appears, with the scripts in the container", func() {
		sb := ct.Seeded(ct.NewSandbox(ns, "seeded", "init-missing", "postgres"), "seed")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InitFailed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("ConfigMap seed not found in namespace " + ns))
		Expect(ct.ContainersOf(sim, sb)).To(BeEmpty())

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
			Data: map[string]string{"20-rows.sql": "INSERT INTO t VALUES (1);", "10-schema.sql": "CREATE TABLE t (id int);", "keys.redis": "SET a 1"}}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		// Note: well before the stalled recheck: the ConfigMap's watch brings it back.
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 20*time.Second).Should(Equal("True/Ready"))
		cs := ct.ContainersOf(sim, sb)
		Expect(cs).To(HaveLen(1))
		c, err := sim.Inspect(ctx, cs[0].ID)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Labels).To(HaveKey(host.LabelInit))
		for _, key := range []string{"10-schema.sql", "20-rows.sql"} {
			content, ok := sim.File(cs[0].ID, engine.InitDir+key)
			Expect(ok).To(BeTrue(), "no %s in the container", key)
			Expect(string(content)).To(Equal(cm.Data[key]))
		}
		_, redisScript := sim.File(cs[0].ID, engine.InitDir+"keys.redis")
		Expect(redisScript).To(BeFalse(), "postgres got redis' script")
	})

	It("refuses a key no engine runs, naming the suffixes", func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
			Data: map[string]string{"schema.sql": "SELECT 1;", "notes.txt": "hello"}}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		sb := ct.Seeded(ct.NewSandbox(ns, "seeded", "init-badkey", "redis"), "seed")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady)).Should(Equal("False/InitFailed"))
		msg := ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message
		Expect(msg).To(ContainSubstring("key notes.txt is no init script"))
		Expect(msg).To(ContainSubstring(".sql, .redis, .js"))
		Expect(ct.ContainersOf(sim, sb)).To(BeEmpty())

		By("fixing the ConfigMap")
		Eventually(func() error {
			cur := &corev1.ConfigMap{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cur); err != nil {
				return err
			}
			delete(cur.Data, "notes.txt")
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 20*time.Second).Should(Equal("True/Ready"))
	})
})
