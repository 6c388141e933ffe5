package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// edit changes a Sandbox's spec, retrying on conflicts (the manager writes its
// status meanwhile).
func edit(sb *sandboxv1.Sandbox, change func(*sandboxv1.SandboxSpec)) {
	EventuallyWithOffset(1, func() error {
		cur := get(sb)
		change(&cur.Spec)
		return k8sClient.Update(ctx, cur)
	}).Should(Succeed())
}

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
func memoryOf(host *engineSim, sb *sandboxv1.Sandbox) func() string {
	return func() string {
		cs := containersOf(host, sb)
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
	EventuallyWithOffset(1, condition(sb, sandboxv1.ConditionUpToDate)).Should(Equal("False/" + reason))
	cur := get(sb)
	ExpectWithOffset(1, cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	ExpectWithOffset(1, condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
	ExpectWithOffset(1, condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/" + reason))
}

// Admission is judged on every change that grows what an object takes, not only
// on its first create: a refused growth leaves what runs exactly as it is.
var _ = Describe("Growth", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("judges a Sandbox's memory growth against its quota: refused, the container stays as it is; applied once room frees", func() {
		host := newHost()
		startManager(host, testOptions())
		q := newQuota(ns, sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("1Gi"))})
		sb := newSandbox(ns, "grows", "grows-"+ns, "redis")
		withMemory("128Mi")(&sb.Spec)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		before := containersOf(host, sb)[0].ID
		Eventually(quotaSummary(q)).Should(Equal("memory 128Mi/1Gi"))

		edit(sb, withMemory("4Gi"))
		expectHeld(sb, sandboxv1.ReasonQuotaExceeded)
		Expect(conditionOf(sb, sandboxv1.ConditionUpToDate).Message).To(ContainSubstring("memory: used 0, requested 4Gi, hard 1Gi"))
		Consistently(memoryOf(host, sb), 2*time.Second, 50*time.Millisecond).Should(Equal("128Mi"))
		Expect(containersOf(host, sb)[0].ID).To(Equal(before), "the running container was replaced")
		Expect(quotaSummary(q)()).To(Equal("memory 128Mi/1Gi"))
		Expect(get(sb).Status.Admitted.Memory.String()).To(Equal("128Mi"))

		// Room freed (the quota raised): the growth applies.
		setQuotaMemory(q, "8Gi")
		Eventually(memoryOf(host, sb)).Should(Equal("4Gi"))
		waitReady(sb)
		Eventually(condition(sb, sandboxv1.ConditionUpToDate)).Should(Equal("True/UpToDate"))
		Eventually(quotaSummary(q)).Should(Equal("memory 4Gi/8Gi"))

		// Shrinking always passes, and frees its room.
		edit(sb, withMemory("64Mi"))
		Eventually(memoryOf(host, sb)).Should(Equal("64Mi"))
		Eventually(quotaSummary(q)).Should(Equal("memory 64Mi/8Gi"))
	})

	It("judges an added service against the quota: the running services stay Ready, the new one waits for room", func() {
		host := newHost()
		startManager(host, testOptions())
		q := newQuota(ns, sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("200Mi"))})
		sb := newSandbox(ns, "adds", "adds-"+ns, "redis")
		withMemory("128Mi")(&sb.Spec)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)

		edit(sb, func(s *sandboxv1.SandboxSpec) {
			s.Services = append(s.Services, sandboxv1.ServiceSpec{Engine: "postgres",
				Resources: &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("128Mi"))}})
		})
		expectHeld(sb, sandboxv1.ReasonQuotaExceeded)
		Consistently(func() int { return len(containersOf(host, sb)) }, 2*time.Second, 50*time.Millisecond).Should(Equal(1))
		Expect(quotaSummary(q)()).To(Equal("memory 128Mi/200Mi"))

		setQuotaMemory(q, "1Gi")
		Eventually(func() int { return len(containersOf(host, sb)) }).Should(Equal(2))
		waitReady(sb)
		Eventually(quotaSummary(q)).Should(Equal("memory 256Mi/1Gi"))
	})

	It("judges a pinned Sandbox's growth against its host's capacity", func() {
		local, b := newHost(), newHost()
		registerHost("grow-b", nil, nil)
		setHost("grow-b", func(s *sandboxv1.DockerHostSpec) {
			s.Capacity = &sandboxv1.DockerHostCapacity{Memory: ptr.To(resource.MustParse("1Gi"))}
		})
		fleetOf(local, map[string]*engineSim{"grow-b": b})
		sb := newSandbox(ns, "pinned", "grow-pinned-"+ns, "redis")
		sb.Spec.DockerHost = "grow-b"
		withMemory("128Mi")(&sb.Spec)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)

		edit(sb, withMemory("4Gi"))
		expectHeld(sb, sandboxv1.ReasonUnschedulable)
		Expect(conditionOf(sb, sandboxv1.ConditionUpToDate).Message).To(ContainSubstring("no capacity left"))
		Consistently(memoryOf(b, sb), 2*time.Second, 50*time.Millisecond).Should(Equal("128Mi"))

		setHost("grow-b", func(s *sandboxv1.DockerHostSpec) { s.Capacity.Memory = ptr.To(resource.MustParse("8Gi")) })
		Eventually(memoryOf(b, sb)).Should(Equal("4Gi"))
		waitReady(sb)
	})

	It("judges a pool's scale-up against its host's capacity: it keeps the members it was admitted to", func() {
		local, b := newHost(), newHost()
		registerHost("grow-p", nil, ptr.To[int32](3))
		fleetOf(local, map[string]*engineSim{"grow-p": b})
		pool := newPool(ns, "scaled", "redis", 1)
		pool.Spec.DockerHost = "grow-p"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{1, 1, 0}))

		Eventually(func() error {
			cur := getPool(pool)
			cur.Spec.Replicas = ptr.To[int32](100)
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() string { return poolReady(pool) }).Should(ContainSubstring("no capacity left"))
		Consistently(func() int { return len(members(b, pool)) }, 2*time.Second, 50*time.Millisecond).Should(Equal(1))

		Eventually(func() error {
			cur := getPool(pool)
			cur.Spec.Replicas = ptr.To[int32](3)
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{3, 3, 0}))
	})
})
