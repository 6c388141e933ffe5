package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

var _ = Describe("Lifecycle", func() {
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

	It("puts the finalizer on before anything exists on the Docker host", func() {
		release := host.HoldPull("postgres:16-alpine")
		defer release()
		sb := newSandbox(ns, "fin", "fin-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() []string { return get(sb).Finalizers }).Should(ContainElement(controllers.Finalizer))
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())
	})

	It("leaves a paused container as it is, says so, and is Ready again when it is unpaused", func() {
		sb := newSandbox(ns, "paused", "paused-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID
		Expect(host.Pause(id)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionContainersRunning)).Should(Equal("False/Paused"))
		Expect(conditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("paused"))
		Consistently(func() []string { return containerIDs(host, sb) }, "1s").Should(Equal([]string{id}))
		Expect(host.Unpause(id)).To(Succeed())
		got := waitReady(sb)
		Expect(got.Status.Services[0].ContainerID).To(Equal(id))
		Expect(got.Status.Services[0].Restarts).To(BeZero())
	})

	It("refuses a name held by another namespace's live Sandbox, and never touches it", func() {
		first := newSandbox(ns, "first", "shared-agent", "redis")
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		firstReady := waitReady(first)

		second := newSandbox(newNamespace(), "second", "shared-agent", "redis")
		Expect(k8sClient.Create(ctx, second)).To(Succeed())
		Eventually(condition(second, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		msg := conditionOf(second, sandboxv1.ConditionStalled).Message
		Expect(msg).To(ContainSubstring("belongs to a Sandbox of another namespace"))
		Expect(msg).NotTo(ContainSubstring(ns), "another tenant's namespace is not named")
		Expect(msg).NotTo(ContainSubstring("first"), "another tenant's Sandbox is not named")
		Expect(condition(second, sandboxv1.ConditionReady)()).To(Equal("False/Failed"))
		Consistently(func() string { return get(first).Status.Services[0].ContainerID }, "1s").
			Should(Equal(firstReady.Status.Services[0].ContainerID))
		Expect(condition(first, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
	})

	It("refuses a name held by a container without our labels", func() {
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-foreign-1", Image: "redis:8-alpine"}, true)
		Expect(err).NotTo(HaveOccurred())
		sb := newSandbox(ns, "foreign", "foreign-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(conditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("carries no Sandbox UID label"))
		_, still := host.Peek("roboco-sandbox-redis-foreign-1")
		Expect(still).To(BeTrue())
	})

	It("refuses a name held by another control plane's container, and never touches it", func() {
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-other-1", Image: "redis:8-alpine",
			Labels: map[string]string{shost.LabelSandbox: "1", shost.LabelUID: "uid-of-another-api-server",
				shost.LabelNamespace: ns, shost.LabelName: "other", shost.LabelInstance: "staging"}}, true)
		Expect(err).NotTo(HaveOccurred())
		sb := newSandbox(ns, "other", "other-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(conditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring(`another control plane (instance "staging"`))
		_, still := host.Peek("roboco-sandbox-redis-other-1")
		Expect(still).To(BeTrue())
	})

	It("removes a stale same-named container whose Sandbox no longer exists", func() {
		stale, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-pg-stale-1", Image: "postgres:16-alpine",
			Labels: map[string]string{shost.LabelSandbox: "1", shost.LabelUID: "0b7e-gone",
				shost.LabelNamespace: ns, shost.LabelName: "old", shost.LabelInstance: suiteInstance()}}, true)
		Expect(err).NotTo(HaveOccurred())
		sb := newSandbox(ns, "fresh", "stale-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := waitReady(sb)
		Expect(got.Status.Services[0].ContainerID).NotTo(Equal(stale.ID))
		_, still := host.Peek(stale.ID)
		Expect(still).To(BeFalse())
		Eventually(eventReasons(sb)).Should(ContainElement("StaleRemoved"))
	})

	It("tears down by UID label on delete: containers, volumes and Secret gone, then the object", func() {
		sb := newSandbox(ns, "del", "del-1", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		uid := string(waitReady(sb).UID)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		Expect(containersByUID(host, uid)()).To(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
		Expect(k8sClient.Get(ctx, keyOf(ns, "del-sandbox"), &corev1Secret{})).NotTo(Succeed())
	})

	It("leaks nothing when deleted while its image is still pulling", func() {
		release := host.HoldPull("postgres:16-alpine")
		sb := newSandbox(ns, "delpull", "delpull-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionImagesReady)).Should(Equal("False/Pulling"))
		uid := string(get(sb).UID)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		release() // the pull finishes after the Sandbox is gone
		Consistently(containersByUID(host, uid), "2s").Should(BeEmpty())
		Expect(host.Calls(fake.VerbCreateContainer)).To(BeZero())
	})

	It("leaks nothing when deleted while probing", func() {
		host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 2, Stderr: "not yet"}})
		sb := newSandbox(ns, "delprobe", "delprobe-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionServicesReady)).Should(Equal("False/Probing"))
		uid := string(get(sb).UID)
		// Note: Probing also covers the wait for the image, so the containers may
		// come a moment after the condition.
		Eventually(containersByUID(host, uid)).Should(HaveLen(2))
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		Consistently(containersByUID(host, uid), "1s").Should(BeEmpty())
		Expect(host.Volumes()).To(BeEmpty())
	})

	It("converges after a manager restart mid-provision, with the same credentials and no duplicates", func() {
		release := host.HoldPull("mongo:8")
		sb := newSandbox(ns, "restart", "restart-1", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() int { return len(containersOf(host, sb)) }).Should(Equal(2))
		secret := secretOf(sb)
		stop()
		startManager(host, testOptions())
		release()
		got := waitReady(sb)
		Expect(secretOf(sb)).To(Equal(secret))
		cs := containersOf(host, sb)
		Expect(cs).To(HaveLen(3))
		for _, s := range got.Status.Services {
			Expect(s.Restarts).To(BeZero())
		}
	})

	It("recreates a container that died, was OOM-killed or vanished, with the same credentials", func() {
		sb := newSandbox(ns, "drift", "drift-1", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := waitReady(sb)
		secret := secretOf(sb)
		ids := map[sandboxv1.Engine]string{}
		for _, s := range got.Status.Services {
			ids[s.Engine] = s.ContainerID
		}
		Expect(host.ExitContainer(ids["postgres"], 1, 0)).To(Succeed())
		Expect(host.OOMKill(ids["redis"])).To(Succeed())
		Expect(host.DeleteContainer(ids["mongo"])).To(Succeed())

		Eventually(func() map[sandboxv1.Engine]int32 {
			out := map[sandboxv1.Engine]int32{}
			s := get(sb)
			for _, svc := range s.Status.Services {
				if svc.Ready && svc.ContainerID != ids[svc.Engine] {
					out[svc.Engine] = svc.Restarts
				}
			}
			return out
		}, 30*time.Second).Should(Equal(map[sandboxv1.Engine]int32{"postgres": 1, "redis": 1, "mongo": 1}))
		waitReady(sb)
		Expect(secretOf(sb)).To(Equal(secret))
		Expect(containersOf(host, sb)).To(HaveLen(3))
		Eventually(eventReasons(sb)).Should(ContainElement("Recreated"))
	})

	It("makes new credentials and replaces the containers when the Secret is deleted by hand", func() {
		sb := newSandbox(ns, "lost", "lost-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		before := waitReady(sb).Status.Services[0].ContainerID
		oldPassword := secretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]
		Expect(k8sClient.Delete(ctx, &corev1Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost-sandbox"}})).To(Succeed())
		Eventually(func() string { return get(sb).Status.Services[0].ContainerID }).ShouldNot(Equal(before))
		waitReady(sb)
		Expect(secretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]).NotTo(Equal(oldPassword))
		Expect(containersOf(host, sb)).To(HaveLen(1))
		Eventually(eventReasons(sb)).Should(ContainElement("SecretRecreated"))
	})

	It("adds and removes services without touching the others", func() {
		sb := newSandbox(ns, "change", "change-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		pg := waitReady(sb).Status.Services[0].ContainerID
		pgPassword := secretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]

		got := get(sb)
		got.Spec.Services = append(got.Spec.Services, sandboxv1.ServiceSpec{Engine: "redis"})
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() []string { return engines(get(sb)) }).Should(Equal([]string{"postgres", "redis"}))
		got = waitReady(sb)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(got.Status.Services[0].ContainerID).To(Equal(pg))
		Expect(secretOf(sb)).To(HaveKey("ROBOCO_TEST_REDIS_PASSWORD"))

		got.Spec.Services = got.Spec.Services[1:]
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func() int { return len(containersOf(host, sb)) }).Should(Equal(1))
		_, pgStill := host.Peek(pg)
		Expect(pgStill).To(BeFalse())
		// Note: the pass that removed postgres publishes its status after the
		// container is gone; the status read before it still lists both.
		Eventually(func() []string { return engines(get(sb)) }).Should(Equal([]string{"redis"}))
		waitReady(sb)
		Expect(secretOf(sb)).NotTo(HaveKey("ROBOCO_TEST_DB_PASSWORD"))
		Expect(secretOf(sb)).NotTo(ContainElement(pgPassword))
	})

	It("deletes itself past its ttl", func() {
		sb := newSandbox(ns, "ttl", "ttl-1", "redis")
		sb.Spec.TTL = &metav1.Duration{Duration: 3 * time.Second}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		uid := string(waitReady(sb).UID)
		Eventually(gone(sb), 15*time.Second).Should(BeTrue())
		Expect(containersByUID(host, uid)()).To(BeEmpty())
		Expect(eventReasons(sb)()).To(ContainElement("Expired"))
	})
})

func engines(sb *sandboxv1.Sandbox) []string {
	var out []string
	for _, s := range sb.Status.Services {
		out = append(out, string(s.Engine))
	}
	return out
}
