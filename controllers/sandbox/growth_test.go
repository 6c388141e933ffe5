package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// withMemory sets every service's memory limit.
func withMemory(q string) func(*sandboxv1.SandboxSpec) {
	return func(s *sandboxv1.SandboxSpec) {
		for i := range s.Services {
			s.Services[i].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse(q))}
		}
	}
}

// memoryOf is the memory limit of a Sandbox's only container ("" when it has
// none, or several).
func memoryOf(host *ct.EngineSim, sb *sandboxv1.Sandbox) func() string {
	return func() string {
		cs := ct.ContainersOf(host, sb)
		if len(cs) != 1 {
			return ""
		}
		c, err := host.Inspect(ctx, cs[0].ID)
		Expect(err).NotTo(HaveOccurred())
		return resource.NewQuantity(c.MemoryBytes, resource.BinarySI).String()
	}
}

// setQuotaMemory raises (or lowers) a quota's hard memory.
func setQuotaMemory(q *sandboxv1.SandboxQuota, mem string) {
	EventuallyWithOffset(1, func() error {
		cur := &sandboxv1.SandboxQuota{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(q), cur)).To(Succeed())
		cur.Spec.Hard.Memory = ptr.To(resource.MustParse(mem))
		return k8sClient.Update(ctx, cur)
	}).Should(Succeed())
}

// expectHeld says a Sandbox's growth is refused while what runs stays: Ready still
// True, its generation observed, UpToDate False and Reconciling True with reason.
func expectHeld(sb *sandboxv1.Sandbox, reason string) {
	EventuallyWithOffset(1, ct.Condition(sb, sandboxv1.ConditionUpToDate)).Should(Equal("False/" + reason))
	cur := ct.Get(sb)
	ExpectWithOffset(1, cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	ExpectWithOffset(1, ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
	ExpectWithOffset(1, ct.Condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/" + reason))
}

// Admission is judged on every change that grows what an object takes, not only
// on its first create: a refused growth leaves what runs exactly as it is.
var _ = Describe("Growth", func() {
	var ns string
	BeforeEach(func() { ns = ct.NewNamespace() })

	It("judges a Sandbox's memory growth against its quota: refused, the container stays as it is; applied once room frees", func() {
		host := ct.NewHost()
		ct.StartManager(host, ct.TestOptions())
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("1Gi"))})
		sb := ct.NewSandbox(ns, "grows", "grows-"+ns, "redis")
		withMemory("128Mi")(&sb.Spec)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		before := ct.ContainersOf(host, sb)[0].ID
		Eventually(ct.QuotaSummary(q)).Should(Equal("memory 128Mi/1Gi"))

		ct.Edit(sb, withMemory("4Gi"))
		expectHeld(sb, sandboxv1.ReasonQuotaExceeded)
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionUpToDate).Message).To(ContainSubstring("memory: used 0, requested 4Gi, hard 1Gi"))
		Consistently(memoryOf(host, sb), 2*time.Second, 50*time.Millisecond).Should(Equal("128Mi"))
		Expect(ct.ContainersOf(host, sb)[0].ID).To(Equal(before), "the running container was replaced")
		Expect(ct.QuotaSummary(q)()).To(Equal("memory 128Mi/1Gi"))
		Expect(ct.Get(sb).Status.Admitted.Memory.String()).To(Equal("128Mi"))

		// Room freed (the quota raised): the growth applies.
		setQuotaMemory(q, "8Gi")
		Eventually(memoryOf(host, sb)).Should(Equal("4Gi"))
		ct.WaitReady(sb)
		Eventually(ct.Condition(sb, sandboxv1.ConditionUpToDate)).Should(Equal("True/UpToDate"))
		Eventually(ct.QuotaSummary(q)).Should(Equal("memory 4Gi/8Gi"))

		// Shrinking always passes, and frees its room.
		ct.Edit(sb, withMemory("64Mi"))
		Eventually(memoryOf(host, sb)).Should(Equal("64Mi"))
		Eventually(ct.QuotaSummary(q)).Should(Equal("memory 64Mi/8Gi"))
	})

	It("judges an added service against the quota: the running services stay Ready, the new one waits for room", func() {
		host := ct.NewHost()
		ct.StartManager(host, ct.TestOptions())
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("200Mi"))})
		sb := ct.NewSandbox(ns, "adds", "adds-"+ns, "redis")
		withMemory("128Mi")(&sb.Spec)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)

		ct.Edit(sb, func(s *sandboxv1.SandboxSpec) {
			s.Services = append(s.Services, sandboxv1.ServiceSpec{Engine: "postgres",
				Resources: &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("128Mi"))}})
		})
		expectHeld(sb, sandboxv1.ReasonQuotaExceeded)
		Consistently(func() int { return len(ct.ContainersOf(host, sb)) }, 2*time.Second, 50*time.Millisecond).Should(Equal(1))
		Expect(ct.QuotaSummary(q)()).To(Equal("memory 128Mi/200Mi"))

		setQuotaMemory(q, "1Gi")
		Eventually(func() int { return len(ct.ContainersOf(host, sb)) }).Should(Equal(2))
		ct.WaitReady(sb)
		Eventually(ct.QuotaSummary(q)).Should(Equal("memory 256Mi/1Gi"))
	})

	It("judges a pinned Sandbox's growth against its host's capacity", func() {
		local, b := ct.NewHost(), ct.NewHost()
		ct.RegisterHost("grow-b", nil, nil)
		ct.SetHost("grow-b", func(s *sandboxv1.DockerHostSpec) {
			s.Capacity = &sandboxv1.DockerHostCapacity{Memory: ptr.To(resource.MustParse("1Gi"))}
		})
		ct.FleetOf(local, map[string]*ct.EngineSim{"grow-b": b})
		sb := ct.NewSandbox(ns, "pinned", "grow-pinned-"+ns, "redis")
		sb.Spec.DockerHost = "grow-b"
		withMemory("128Mi")(&sb.Spec)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)

		ct.Edit(sb, withMemory("4Gi"))
		expectHeld(sb, sandboxv1.ReasonUnschedulable)
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionUpToDate).Message).To(ContainSubstring("no capacity left"))
		Consistently(memoryOf(b, sb), 2*time.Second, 50*time.Millisecond).Should(Equal("128Mi"))

		ct.SetHost("grow-b", func(s *sandboxv1.DockerHostSpec) { s.Capacity.Memory = ptr.To(resource.MustParse("8Gi")) })
		Eventually(memoryOf(b, sb)).Should(Equal("4Gi"))
		ct.WaitReady(sb)
	})
})
