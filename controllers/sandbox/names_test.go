package controllers_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// A Sandbox whose container name would be another's 63-character alias (the
// published host of a longer agentID) would answer to the other's host on the
// network: Docker's DNS gives both addresses, and one agent's connections reach
// the other tenant's database.
var _ = Describe("One name, one container", func() {
	const prefix = "roboco-sandbox-redis-"
	long := "tenant-a-" + strings.Repeat("x", 38) // 47 characters: a 68-character container name, so an alias

	It("refuses a Sandbox whose container name is another's alias, across namespaces, and serves it once that one is gone", func() {
		host := newHost()
		startManager(host, testOptions())
		first := newSandbox(newNamespace(), "long", long, "redis")
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		alias := waitReady(first).Status.Services[0].Host
		Expect(alias).To(HaveLen(63))
		Expect(alias).To(HavePrefix(prefix))

		squat := newSandbox(newNamespace(), "squat", strings.TrimPrefix(alias, prefix), "redis")
		Expect(k8sClient.Create(ctx, squat)).To(Succeed())
		Eventually(condition(squat, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		msg := conditionOf(squat, sandboxv1.ConditionStalled).Message
		Expect(msg).To(ContainSubstring(alias))
		Expect(msg).To(ContainSubstring("a Sandbox of another namespace"))
		Expect(msg).NotTo(ContainSubstring(first.Namespace))
		Expect(msg).NotTo(ContainSubstring(long))
		_, made := host.Peek(alias)
		Expect(made).To(BeFalse(), "a container answering to the other Sandbox's host was made")
		Expect(condition(first, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))

		By("the first one deleted, its name is free")
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(gone(first)).Should(BeTrue())
		Expect(waitReady(squat).Status.Services[0].ContainerName).To(Equal(alias))
	})

	It("refuses the longer agentID when the container name its alias would equal came first", func() {
		host := newHost()
		startManager(host, testOptions())
		probe := newSandbox(newNamespace(), "probe", long, "redis")
		Expect(k8sClient.Create(ctx, probe)).To(Succeed())
		alias := waitReady(probe).Status.Services[0].Host
		Expect(k8sClient.Delete(ctx, probe)).To(Succeed())
		Eventually(gone(probe)).Should(BeTrue())

		short := newSandbox(newNamespace(), "short", strings.TrimPrefix(alias, prefix), "redis")
		Expect(k8sClient.Create(ctx, short)).To(Succeed())
		waitReady(short)
		longer := newSandbox(short.Namespace, "longer", long, "redis")
		Expect(k8sClient.Create(ctx, longer)).To(Succeed())
		Eventually(condition(longer, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(conditionOf(longer, sandboxv1.ConditionStalled).Message).To(ContainSubstring("belongs to Sandbox short"), "the same namespace's Sandbox is named")
		_, made := host.Peek(prefix + long)
		Expect(made).To(BeFalse())
		Expect(k8sClient.DeleteAllOf(ctx, &sandboxv1.Sandbox{}, client.InNamespace(short.Namespace))).To(Succeed())
	})
})
