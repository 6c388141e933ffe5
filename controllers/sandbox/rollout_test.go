package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// Operator changes apply to new containers; a running one (and the data in it) is
// replaced only by a rollout. Spec changes replace it at once, and neither counts
// as a restart.
var _ = Describe("Rollout", func() {
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

	service := func(sb *sandboxv1.Sandbox) func() sandboxv1.ServiceStatus {
		return func() sandboxv1.ServiceStatus {
			s := ct.Get(sb)
			if len(s.Status.Services) == 0 {
				return sandboxv1.ServiceStatus{}
			}
			return s.Status.Services[0]
		}
	}

	// restartWith runs the manager again with one more flag, as the operator did.
	restartWith := func(change func(*ct.Options)) {
		stop()
		opts := ct.TestOptions()
		change(&opts)
		stop = ct.StartManager(host, opts)
	}

	It("keeps a running container, with its data, when the operator changes a flag, until a rollout is asked for", func() {
		sb := ct.NewSandbox(ns, "flag", "flag-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		secret := ct.SecretOf(sb)

		restartWith(func(o *ct.Options) { o.PidsLimit = 600 })
		Eventually(ct.Condition(sb, sandboxv1.ConditionUpToDate)).Should(Equal("False/Outdated"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionUpToDate).Message).To(ContainSubstring("pids limit 512 → 600"))
		Consistently(service(sb), "2s").Should(And(
			HaveField("ContainerID", id), HaveField("Ready", true), HaveField("Restarts", BeZero()), HaveField("Outdated", true)))
		Expect(ct.EventReasons(sb)()).NotTo(ContainElements(sandboxv1.EventUpdated, sandboxv1.EventRecreated))
		c, _ := host.Peek(id)
		Expect(c.PidsLimit).To(BeEquivalentTo(512))

		got := ct.Get(sb)
		got.Spec.UpdateStrategy = sandboxv1.UpdateRollingUpdate
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(service(sb)).Should(And(
			Not(HaveField("ContainerID", id)), HaveField("Ready", true), HaveField("Outdated", false)))
		Expect(service(sb)().Restarts).To(BeZero())
		Expect(ct.Condition(sb, sandboxv1.ConditionUpToDate)()).To(Equal("True/UpToDate"))
		c, _ = host.Peek(service(sb)().ContainerID)
		Expect(c.PidsLimit).To(BeEquivalentTo(600))
		Expect(ct.SecretOf(sb)).To(Equal(secret))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventRolledOut))
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventRecreated))
		Expect(ct.ContainersOf(host, sb)).To(HaveLen(1))
	})

	It("rolls out the operator's change at once under --update-strategy=RollingUpdate", func() {
		sb := ct.NewSandbox(ns, "rolling", "rolling-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID

		restartWith(func(o *ct.Options) {
			o.DefaultMemory = resource.MustParse("1Gi")
			o.UpdateStrategy = sandboxv1.UpdateRollingUpdate
		})
		Eventually(service(sb), 10*time.Second).Should(And(
			Not(HaveField("ContainerID", id)), HaveField("Ready", true), HaveField("Restarts", BeZero())))
		c, _ := host.Peek(service(sb)().ContainerID)
		Expect(c.MemoryBytes).To(BeEquivalentTo(1 << 30))
	})

	It("replaces the container for a spec change without counting a restart or calling it vanished", func() {
		sb := ct.NewSandbox(ns, "spec", "spec-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID

		got := ct.Get(sb)
		memory := resource.MustParse("256Mi")
		got.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: &memory}
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(service(sb)).Should(And(Not(HaveField("ContainerID", id)), HaveField("Ready", true)))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventUpdated))
		Consistently(service(sb), "1s").Should(HaveField("Restarts", BeZero()))
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventRecreated))
		Expect(ct.Condition(sb, sandboxv1.ConditionUpToDate)()).To(Equal("True/UpToDate"))
	})
})
