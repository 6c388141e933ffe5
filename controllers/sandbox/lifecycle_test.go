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
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

var _ = Describe("Lifecycle", func() {
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

	It("puts the finalizer on before anything exists on the Docker host", func() {
		release := host.HoldPull("postgres:16-alpine")
		defer release()
		sb := ct.NewSandbox(ns, "fin", "fin-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() []string { return ct.Get(sb).Finalizers }).Should(ContainElement(ct.Finalizer))
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())
	})

	It("leaves a paused container as it is, says so, and is Ready again when it is unpaused", func() {
		sb := ct.NewSandbox(ns, "paused", "paused-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		Expect(host.Pause(id)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionContainersRunning)).Should(Equal("False/Paused"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("paused"))
		Consistently(func() []string { return ct.ContainerIDs(host, sb) }, "1s").Should(Equal([]string{id}))
		Expect(host.Unpause(id)).To(Succeed())
		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].ContainerID).To(Equal(id))
		Expect(got.Status.Services[0].Restarts).To(BeZero())
	})

	It("refuses a name held by another namespace's live Sandbox, and never touches it", func() {
		first := ct.NewSandbox(ns, "first", "shared-agent", "redis")
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		firstReady := ct.WaitReady(first)

		second := ct.NewSandbox(ct.NewNamespace(), "second", "shared-agent", "redis")
		Expect(k8sClient.Create(ctx, second)).To(Succeed())
		Eventually(ct.Condition(second, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		msg := ct.ConditionOf(second, sandboxv1.ConditionStalled).Message
		Expect(msg).To(ContainSubstring("belongs to a Sandbox of another namespace"))
		Expect(msg).NotTo(ContainSubstring(ns), "another tenant's namespace is not named")
		Expect(msg).NotTo(ContainSubstring("first"), "another tenant's Sandbox is not named")
		Expect(ct.Condition(second, sandboxv1.ConditionReady)()).To(Equal("False/Failed"))
		Consistently(func() string { return ct.Get(first).Status.Services[0].ContainerID }, "1s").
			Should(Equal(firstReady.Status.Services[0].ContainerID))
		Expect(ct.Condition(first, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
	})

	It("refuses a name held by a container without our labels", func() {
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-foreign-1", Image: "redis:8-alpine"}, true)
		Expect(err).NotTo(HaveOccurred())
		sb := ct.NewSandbox(ns, "foreign", "foreign-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("carries no Sandbox UID label"))
		_, still := host.Peek("roboco-sandbox-redis-foreign-1")
		Expect(still).To(BeTrue())
	})

	It("refuses a name held by another control plane's container, and never touches it", func() {
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-other-1", Image: "redis:8-alpine",
			Labels: map[string]string{shost.LabelSandbox: "1", shost.LabelUID: "uid-of-another-api-server",
				shost.LabelNamespace: ns, shost.LabelName: "other", shost.LabelInstance: "staging"}}, true)
		Expect(err).NotTo(HaveOccurred())
		sb := ct.NewSandbox(ns, "other", "other-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring(`another control plane (instance "staging"`))
		_, still := host.Peek("roboco-sandbox-redis-other-1")
		Expect(still).To(BeTrue())
	})

	It("removes a stale same-named container whose Sandbox no longer exists", func() {
		stale, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-pg-stale-1", Image: "postgres:16-alpine",
			Labels: map[string]string{shost.LabelSandbox: "1", shost.LabelUID: "0b7e-gone",
				shost.LabelNamespace: ns, shost.LabelName: "old", shost.LabelInstance: ct.SuiteInstance()}}, true)
		Expect(err).NotTo(HaveOccurred())
		sb := ct.NewSandbox(ns, "fresh", "stale-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].ContainerID).NotTo(Equal(stale.ID))
		_, still := host.Peek(stale.ID)
		Expect(still).To(BeFalse())
		Eventually(ct.EventReasons(sb)).Should(ContainElement("StaleRemoved"))
	})

	It("tears down by UID label on delete: containers, volumes and Secret gone, then the object", func() {
		sb := ct.NewSandbox(ns, "del", "del-1", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		uid := string(ct.WaitReady(sb).UID)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Expect(ct.ContainersByUID(host, uid)()).To(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
		Expect(k8sClient.Get(ctx, ct.KeyOf(ns, "del-sandbox"), &corev1.Secret{})).NotTo(Succeed())
	})

	It("leaks nothing when deleted while its image is still pulling", func() {
		release := host.HoldPull("postgres:16-alpine")
		sb := ct.NewSandbox(ns, "delpull", "delpull-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionImagesReady)).Should(Equal("False/Pulling"))
		uid := string(ct.Get(sb).UID)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		release() // the pull finishes after the Sandbox is gone
		Consistently(ct.ContainersByUID(host, uid), "2s").Should(BeEmpty())
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())
	})

	It("leaks nothing when deleted while probing", func() {
		host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 2, Stderr: "not yet"}})
		sb := ct.NewSandbox(ns, "delprobe", "delprobe-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady)).Should(Equal("False/Probing"))
		uid := string(ct.Get(sb).UID)
		// Note: Probing also covers the wait for the image, so the containers may
		// come a moment after the condition.
		Eventually(ct.ContainersByUID(host, uid)).Should(HaveLen(2))
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Consistently(ct.ContainersByUID(host, uid), "1s").Should(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
	})

	It("converges after a manager restart mid-provision, with the same credentials and no duplicates", func() {
		release := host.HoldPull("mongo:8")
		sb := ct.NewSandbox(ns, "restart", "restart-1", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() int { return len(ct.ContainersOf(host, sb)) }).Should(Equal(2))
		secret := ct.SecretOf(sb)
		stop()
		ct.StartManager(host, ct.TestOptions())
		release()
		got := ct.WaitReady(sb)
		Expect(ct.SecretOf(sb)).To(Equal(secret))
		cs := ct.ContainersOf(host, sb)
		Expect(cs).To(HaveLen(3))
		for _, s := range got.Status.Services {
			Expect(s.Restarts).To(BeZero())
		}
	})

	It("recreates a container that died, was OOM-killed or vanished, with the same credentials", func() {
		sb := ct.NewSandbox(ns, "drift", "drift-1", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		secret := ct.SecretOf(sb)
		ids := map[sandboxv1.Engine]string{}
		for _, s := range got.Status.Services {
			ids[s.Engine] = s.ContainerID
		}
		Expect(host.ExitContainer(ids["postgres"], 1, 0)).To(Succeed())
		Expect(host.OOMKill(ids["redis"])).To(Succeed())
		Expect(host.DeleteContainer(ids["mongo"])).To(Succeed())

		Eventually(func() map[sandboxv1.Engine]int32 {
			out := map[sandboxv1.Engine]int32{}
			s := ct.Get(sb)
			for _, svc := range s.Status.Services {
				if svc.Ready && svc.ContainerID != ids[svc.Engine] {
					out[svc.Engine] = svc.Restarts
				}
			}
			return out
		}, 30*time.Second).Should(Equal(map[sandboxv1.Engine]int32{"postgres": 1, "redis": 1, "mongo": 1}))
		ct.WaitReady(sb)
		Expect(ct.SecretOf(sb)).To(Equal(secret))
		Expect(ct.ContainersOf(host, sb)).To(HaveLen(3))
		Eventually(ct.EventReasons(sb)).Should(ContainElement("Recreated"))
	})

	It("makes new credentials and replaces the containers when the Secret is deleted by hand", func() {
		sb := ct.NewSandbox(ns, "lost", "lost-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		before := ct.WaitReady(sb).Status.Services[0].ContainerID
		oldPassword := ct.SecretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost-sandbox"}})).To(Succeed())
		Eventually(func() string { return ct.Get(sb).Status.Services[0].ContainerID }).ShouldNot(Equal(before))
		ct.WaitReady(sb)
		Expect(ct.SecretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]).NotTo(Equal(oldPassword))
		Expect(ct.ContainersOf(host, sb)).To(HaveLen(1))
		Eventually(ct.EventReasons(sb)).Should(ContainElement("SecretRecreated"))
	})

	It("adds and removes services without touching the others", func() {
		sb := ct.NewSandbox(ns, "change", "change-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		pg := ct.WaitReady(sb).Status.Services[0].ContainerID
		pgPassword := ct.SecretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]

		got := ct.Get(sb)
		got.Spec.Services = append(got.Spec.Services, sandboxv1.ServiceSpec{Engine: "redis"})
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() []string { return ct.Engines(ct.Get(sb)) }).Should(Equal([]string{"postgres", "redis"}))
		got = ct.WaitReady(sb)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(got.Status.Services[0].ContainerID).To(Equal(pg))
		Expect(ct.SecretOf(sb)).To(HaveKey("ROBOCO_TEST_REDIS_PASSWORD"))

		got.Spec.Services = got.Spec.Services[1:]
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() int { return len(ct.ContainersOf(host, sb)) }).Should(Equal(1))
		_, pgStill := host.Peek(pg)
		Expect(pgStill).To(BeFalse())
		// Note: the pass that removed postgres publishes its status after the
		// container is gone; the status read before it still lists both.
		Eventually(func() []string { return ct.Engines(ct.Get(sb)) }).Should(Equal([]string{"redis"}))
		ct.WaitReady(sb)
		Expect(ct.SecretOf(sb)).NotTo(HaveKey("ROBOCO_TEST_DB_PASSWORD"))
		Expect(ct.SecretOf(sb)).NotTo(ContainElement(pgPassword))
	})

	It("deletes itself past its ttl", func() {
		sb := ct.NewSandbox(ns, "ttl", "ttl-1", "redis")
		sb.Spec.TTL = &metav1.Duration{Duration: 3 * time.Second}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		uid := string(ct.WaitReady(sb).UID)
		Eventually(ct.Gone(sb), 15*time.Second).Should(BeTrue())
		Expect(ct.ContainersByUID(host, uid)()).To(BeEmpty())
		Eventually(ct.EventReasons(sb)).Should(ContainElement("Expired"))
	})
})
