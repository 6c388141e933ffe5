package sandbox_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A Sandbox whose container name would be another's 63-character alias (the
// published host of a longer agentID) would answer to the other's host on the
// network: Docker's DNS gives both addresses, and one agent's connections reach
// the other tenant's database.
var _ = Describe("One name, one container", func() {
	const prefix = "roboco-sandbox-redis-"
	long := "tenant-a-" + strings.Repeat("x", 38) // 47 characters: a 68-character container name, so an alias

	It("refuses a Sandbox whose container name is another's alias, across namespaces, and serves it once that one is gone", func() {
		host := ct.NewHost()
		ct.StartManager(host, ct.TestOptions())
		first := ct.NewSandbox(ct.NewNamespace(), "long", long, "redis")
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		alias := ct.WaitReady(first).Status.Services[0].Host
		Expect(alias).To(HaveLen(63))
		Expect(alias).To(HavePrefix(prefix))

		squat := ct.NewSandbox(ct.NewNamespace(), "squat", strings.TrimPrefix(alias, prefix), "redis")
		Expect(k8sClient.Create(ctx, squat)).To(Succeed())
		Eventually(ct.Condition(squat, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		msg := ct.ConditionOf(squat, sandboxv1.ConditionStalled).Message
		Expect(msg).To(ContainSubstring(alias))
		Expect(msg).To(ContainSubstring("a Sandbox of another namespace"))
		Expect(msg).NotTo(ContainSubstring(first.Namespace))
		Expect(msg).NotTo(ContainSubstring(long))
		_, made := host.Peek(alias)
		Expect(made).To(BeFalse(), "a container answering to the other Sandbox's host was made")
		Expect(ct.Condition(first, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))

		By("the first one deleted, its name is free")
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(ct.Gone(first)).Should(BeTrue())
		Expect(ct.WaitReady(squat).Status.Services[0].ContainerName).To(Equal(alias))
	})

	It("refuses the longer agentID when the container name its alias would equal came first", func() {
		host := ct.NewHost()
		ct.StartManager(host, ct.TestOptions())
		probe := ct.NewSandbox(ct.NewNamespace(), "probe", long, "redis")
		Expect(k8sClient.Create(ctx, probe)).To(Succeed())
		alias := ct.WaitReady(probe).Status.Services[0].Host
		Expect(k8sClient.Delete(ctx, probe)).To(Succeed())
		Eventually(ct.Gone(probe)).Should(BeTrue())

		short := ct.NewSandbox(ct.NewNamespace(), "short", strings.TrimPrefix(alias, prefix), "redis")
		Expect(k8sClient.Create(ctx, short)).To(Succeed())
		ct.WaitReady(short)
		longer := ct.NewSandbox(short.Namespace, "longer", long, "redis")
		Expect(k8sClient.Create(ctx, longer)).To(Succeed())
		Eventually(ct.Condition(longer, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(ct.ConditionOf(longer, sandboxv1.ConditionStalled).Message).To(ContainSubstring("belongs to Sandbox short"), "the same namespace's Sandbox is named")
		_, made := host.Peek(prefix + long)
		Expect(made).To(BeFalse())
		Expect(k8sClient.DeleteAllOf(ctx, &sandboxv1.Sandbox{}, client.InNamespace(short.Namespace))).To(Succeed())
	})

	// An orchestrator that replaces an agent's Sandbox deletes the old one and
	// at once makes a new one with the agentID: the names are the old one's
	// until its teardown ends, then the new one's, on a container of its own.
	It("serves a new Sandbox with the agentID of one being deleted once that one's teardown ends", func() {
		host := ct.NewHost()
		ct.StartManager(host, ct.TestOptions())
		ns := ct.NewNamespace()
		old := ct.NewSandbox(ns, "old", "reused-1", "redis")
		Expect(k8sClient.Create(ctx, old)).To(Succeed())
		oldID := ct.WaitReady(old).Status.Services[0].ContainerID
		clear := host.Inject(fake.Fault{Verb: fake.VerbRemove, Ref: prefix + "reused-1", Err: dd.ErrUnavailable})
		DeferCleanup(clear)
		Expect(k8sClient.Delete(ctx, old)).To(Succeed())

		next := ct.NewSandbox(ns, "next", "reused-1", "redis")
		Expect(k8sClient.Create(ctx, next)).To(Succeed())
		Eventually(ct.ConditionMessage(next, sandboxv1.ConditionReady)).Should(ContainSubstring("belongs to Sandbox old"))
		Expect(ct.Get(old).DeletionTimestamp).NotTo(BeNil(), "the old one's teardown still waits")

		By("the old one's teardown ends")
		clear()
		Eventually(ct.Gone(old)).Should(BeTrue())
		ready := ct.WaitReady(next).Status.Services[0]
		Expect(ready.ContainerName).To(Equal(prefix + "reused-1"))
		Expect(ready.ContainerID).NotTo(Equal(oldID), "the new Sandbox was served the old one's container")
	})
})
