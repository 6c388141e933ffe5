package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
)

// Operator changes apply to new containers; a running one (and the data in it) is
// replaced only by a rollout. Spec changes replace it at once, and neither counts
// as a restart.
var _ = Describe("Rollout", func() {
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

	service := func(sb *sandboxv1.Sandbox) func() sandboxv1.ServiceStatus {
		return func() sandboxv1.ServiceStatus {
			s := get(sb)
			if len(s.Status.Services) == 0 {
				return sandboxv1.ServiceStatus{}
			}
			return s.Status.Services[0]
		}
	}

	// restartWith runs the manager again with one more flag, as the operator did.
	restartWith := func(change func(*controllers.Options)) {
		stop()
		opts := testOptions()
		change(&opts)
		stop = startManager(host, opts)
	}

	It("keeps a running container, with its data, when the operator changes a flag, until a rollout is asked for", func() {
		sb := newSandbox(ns, "flag", "flag-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID
		secret := secretOf(sb)

		restartWith(func(o *controllers.Options) { o.PidsLimit = 600 })
		Eventually(condition(sb, sandboxv1.ConditionUpToDate)).Should(Equal("False/Outdated"))
		Expect(conditionOf(sb, sandboxv1.ConditionUpToDate).Message).To(ContainSubstring("pids limit 512 → 600"))
		Consistently(service(sb), "2s").Should(And(
			HaveField("ContainerID", id), HaveField("Ready", true), HaveField("Restarts", BeZero()), HaveField("Outdated", true)))
		Expect(eventReasons(sb)()).NotTo(ContainElements(sandboxv1.EventUpdated, sandboxv1.EventRecreated))
		c, _ := host.Peek(id)
		Expect(c.PidsLimit).To(BeEquivalentTo(512))

		got := get(sb)
		got.Spec.UpdateStrategy = sandboxv1.UpdateRollingUpdate
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(service(sb)).Should(And(
			Not(HaveField("ContainerID", id)), HaveField("Ready", true), HaveField("Outdated", false)))
		Expect(service(sb)().Restarts).To(BeZero())
		Expect(condition(sb, sandboxv1.ConditionUpToDate)()).To(Equal("True/UpToDate"))
		c, _ = host.Peek(service(sb)().ContainerID)
		Expect(c.PidsLimit).To(BeEquivalentTo(600))
		Expect(secretOf(sb)).To(Equal(secret))
		Eventually(eventReasons(sb)).Should(ContainElement(sandboxv1.EventRolledOut))
		Expect(eventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventRecreated))
		Expect(containersOf(host, sb)).To(HaveLen(1))
	})

	It("rolls out the operator's change at once under --update-strategy=RollingUpdate", func() {
		sb := newSandbox(ns, "rolling", "rolling-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID

		restartWith(func(o *controllers.Options) {
			o.DefaultMemory = resource.MustParse("1Gi")
			o.UpdateStrategy = sandboxv1.UpdateRollingUpdate
		})
		Eventually(service(sb), 10*time.Second).Should(And(
			Not(HaveField("ContainerID", id)), HaveField("Ready", true), HaveField("Restarts", BeZero())))
		c, _ := host.Peek(service(sb)().ContainerID)
		Expect(c.MemoryBytes).To(BeEquivalentTo(1 << 30))
	})

	It("replaces the container for a spec change without counting a restart or calling it vanished", func() {
		sb := newSandbox(ns, "spec", "spec-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID

		got := get(sb)
		memory := resource.MustParse("256Mi")
		got.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: &memory}
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(service(sb)).Should(And(Not(HaveField("ContainerID", id)), HaveField("Ready", true)))
		Eventually(eventReasons(sb)).Should(ContainElement(sandboxv1.EventUpdated))
		Consistently(service(sb), "1s").Should(HaveField("Restarts", BeZero()))
		Expect(eventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventRecreated))
		Expect(condition(sb, sandboxv1.ConditionUpToDate)()).To(Equal("True/UpToDate"))
	})
})
