package sandbox_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
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
		editConfigMap(cm, func(d map[string]string) { delete(d, "notes.txt") })
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 20*time.Second).Should(Equal("True/Ready"))
	})

	It("refuses a ConfigMap one key past --init-max-scripts, naming the limit, and starts once it is within", func() {
		most := ct.TestOptions().InitBounds().MaxScripts
		data := map[string]string{}
		for i := range most + 1 {
			data[fmt.Sprintf("%03d-rows.sql", i)] = fmt.Sprintf("INSERT INTO t VALUES (%d);", i)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"}, Data: data}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		sb := ct.Seeded(ct.NewSandbox(ns, "seeded", "init-many", "postgres"), "seed")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InitFailed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(ContainSubstring(
			fmt.Sprintf("ConfigMap seed has %d keys; the most allowed is %d (--init-max-scripts)", most+1, most)))
		Expect(ct.ContainersOf(sim, sb)).To(BeEmpty())

		By("dropping one key")
		editConfigMap(cm, func(d map[string]string) { delete(d, "000-rows.sql") })
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 20*time.Second).Should(Equal("True/Ready"))
	})

	It("refuses an init.timeout above --init-max-timeout, naming the limit, and starts once it is within", func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"}, Data: map[string]string{"10-schema.sql": "CREATE TABLE t (id int);"}}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		most := ct.TestOptions().InitBounds().MaxTimeout
		sb := ct.Seeded(ct.NewSandbox(ns, "seeded", "init-long", "postgres"), "seed")
		sb.Spec.Services[0].Init.Timeout = &metav1.Duration{Duration: most + time.Minute}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InitFailed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(ContainSubstring(
			fmt.Sprintf("postgres asks for init.timeout %s; the most allowed is %s (--init-max-timeout)", most+time.Minute, most)))
		Expect(ct.ContainersOf(sim, sb)).To(BeEmpty())

		By("asking for the most allowed")
		Eventually(func() error {
			cur := ct.Get(sb)
			cur.Spec.Services[0].Init.Timeout = &metav1.Duration{Duration: most}
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 20*time.Second).Should(Equal("True/Ready"))
	})
	It("keeps observing a running seeded Sandbox whose init source turns unusable: a removed container is reported, not made again until it is fixed, and a dropped service goes", func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"},
			Data: map[string]string{"keys.redis": "SET a 1", "10-schema.sql": "CREATE TABLE t (id int);"}}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		sb := ct.Seeded(ct.NewSandbox(ns, "seeded", "init-broken", "redis", "postgres"), "seed")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ready := ct.WaitReady(sb)

		By("adding a key no engine runs: what runs stays, and says why it is not up to date")
		editConfigMap(cm, func(d map[string]string) { d["README.md"] = "# seeds" })
		Eventually(ct.Condition(sb, sandboxv1.ConditionUpToDate)).Should(Equal("False/InitFailed"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))

		By("removing the redis container: reported at once, not made again without its scripts")
		var redisID string
		for _, s := range ready.Status.Services {
			if s.Engine == "redis" {
				redisID = s.ContainerID
			}
		}
		Expect(sim.DeleteContainer(redisID)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Failed"))
		Expect(ct.Condition(sb, sandboxv1.ConditionStalled)()).To(Equal("True/InitFailed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionContainersRunning).Message).To(ContainSubstring("key README.md is no init script"))
		Expect(ct.ContainersOf(sim, sb)).To(HaveLen(1), "redis was made again without its scripts")

		By("dropping postgres from the spec: its container goes meanwhile")
		Eventually(func() error {
			cur := ct.Get(sb)
			cur.Spec.Services = cur.Spec.Services[:1]
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() []dd.ContainerSummary { return ct.ContainersOf(sim, sb) }).Should(BeEmpty())

		By("fixing the ConfigMap: redis is made again, seeded")
		editConfigMap(cm, func(d map[string]string) { delete(d, "README.md") })
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 20*time.Second).Should(Equal("True/Ready"))
		cs := ct.ContainersOf(sim, sb)
		Expect(cs).To(HaveLen(1))
		_, seeded := sim.File(cs[0].ID, engine.InitDir+"keys.redis")
		Expect(seeded).To(BeTrue())
	})
	It("never reports Ready unseeded a container whose create began before its scripts broke: it waits, and is seeded once they are back", func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seed"}, Data: map[string]string{"keys.redis": "SET a 1"}}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		creates := sim.Calls(fake.VerbCreateContainer)
		DeferCleanup(sim.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: 8 * time.Second, Times: 1}))
		sb := ct.Seeded(ct.NewSandbox(ns, "seeded", "init-mid-create", "redis"), "seed")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() int { return sim.Calls(fake.VerbCreateContainer) }).Should(BeNumerically(">", creates))
		seeds := sim.StepsStarted("seed")

		By("breaking the scripts while Docker holds the create")
		editConfigMap(cm, func(d map[string]string) { d["README.md"] = "# seeds" })
		Eventually(func() int { return len(ct.ContainersOf(sim, sb)) }, 30*time.Second).Should(Equal(1))
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled), 30*time.Second).Should(Equal("True/InitFailed"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("False/Failed"))
		Expect(sim.StepsStarted("seed")).To(Equal(seeds), "seeded without its scripts")

		By("fixing them: the same container is seeded, then Ready")
		editConfigMap(cm, func(d map[string]string) { delete(d, "README.md") })
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 30*time.Second).Should(Equal("True/Ready"))
		Expect(sim.StepsStarted("seed")).To(Equal(seeds + 1))
	})
})

// editConfigMap applies edit to cm's data on the API server, retrying conflicts.
func editConfigMap(cm *corev1.ConfigMap, edit func(map[string]string)) {
	GinkgoHelper()
	Eventually(func() error {
		cur := &corev1.ConfigMap{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cur); err != nil {
			return err
		}
		edit(cur.Data)
		return k8sClient.Update(ctx, cur)
	}).Should(Succeed())
}
