package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// Deletion always completes: whatever a Sandbox or pool waits for (a host, a
// quota, a policy, a name, an init source), what it never made is not waited
// for, and its quota's room is released.
var _ = Describe("Deleting a Sandbox or pool that waits", func() {
	var ns string
	var local, b *ct.EngineSim
	BeforeEach(func() {
		ns = ct.NewNamespace()
		local, b = ct.NewHost(), ct.NewHost()
	})

	It("lets a Sandbox pinned to a cordoned host go once that host's DockerHost was deleted", func() {
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(5))})
		ct.RegisterHost("wait-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"wait-b": b})
		ct.SetHost("wait-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := ct.NewSandbox(ns, "pinned", "wait-pinned", "redis")
		sb.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))

		ct.DeleteHost("wait-b", false)
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		ct.DeletedGoes(sb)
		Expect(ct.QuotaUsed(q)()).To(Equal([2]int32{0, 0}))
		Expect(b.Calls(fake.VerbCreateContainer)).To(BeZero())
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventDockerHostReleased), "it made nothing to leave behind")
	})

	It("lets a Sandbox go whose DockerHost was forced away, naming the containers it left there", func() {
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(5))})
		ct.RegisterHost("wait-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"wait-b": b})
		sb := ct.NewSandbox(ns, "made", "wait-made", "redis")
		sb.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		Expect(ct.QuotaUsed(q)()).To(Equal([2]int32{1, 0}))

		ct.DeleteHost("wait-b", true)
		ct.DeletedGoes(sb)
		Eventually(ct.QuotaUsed(q)).Should(Equal([2]int32{0, 0}))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventDockerHostReleased))
		_, left := b.Peek(id)
		Expect(left).To(BeTrue(), "a container was removed on a host no DockerHost names")
		Expect(ct.EventMessages(sb)()).To(ContainElement(And(ContainSubstring("DockerHost wait-b was deleted"), ContainSubstring(dd.ShortID(id)))))
	})

	It("lets a Sandbox and a pool go whose DockerHost was deleted while no manager ran", func() {
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(5)), PoolMembers: ptr.To(int32(5))})
		ct.RegisterHost("wait-b", nil, nil)
		stop := ct.FleetOf(local, map[string]*ct.EngineSim{"wait-b": b})
		ct.SetHost("wait-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := ct.NewSandbox(ns, "pinned", "wait-restart", "redis")
		sb.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		pool := ct.NewPool(ns, "pinned", "redis", 2)
		pool.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
		Eventually(func() string { return ct.PoolReady(pool) }).Should(HavePrefix(sandboxv1.ReasonUnschedulable + ": "))
		Expect(ct.GetPool(pool).Finalizers).NotTo(BeEmpty())

		stop()
		ct.DeleteHost("wait-b", true)
		ct.FleetOf(local, nil)
		ct.DeletedGoes(sb)
		Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
		Eventually(ct.PoolGone(pool), 30*time.Second).Should(BeTrue(), "a deleted pool on a DockerHost deleted meanwhile was kept")
		Expect(ct.QuotaUsed(q)()).To(Equal([2]int32{0, 0}))
	})

	Context("on a host that answers", func() {
		BeforeEach(func() {
			stop := ct.StartManager(local, ct.TestOptions())
			DeferCleanup(func() { stop() })
		})

		It("deletes one that waits for quota, a name or an init source, and touches nothing else", func() {
			q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(2))})
			foreign, err := local.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-wait-name", Image: "redis:8-alpine"}, true)
			Expect(err).NotTo(HaveOccurred())
			named := ct.NewSandbox(ns, "named", "wait-name", "redis")
			Expect(k8sClient.Create(ctx, named)).To(Succeed())
			Eventually(ct.Condition(named, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
			seeded := ct.Seeded(ct.NewSandbox(ns, "seeded", "wait-init", "redis"), "absent")
			Expect(k8sClient.Create(ctx, seeded)).To(Succeed())
			Eventually(ct.Condition(seeded, sandboxv1.ConditionStalled)).Should(Equal("True/InitFailed"))
			over := ct.NewSandbox(ns, "over", "wait-quota", "redis")
			Expect(k8sClient.Create(ctx, over)).To(Succeed())
			Eventually(ct.Condition(over, sandboxv1.ConditionReady)).Should(Equal("False/QuotaExceeded"))
			Expect(ct.QuotaUsed(q)()).To(Equal([2]int32{2, 0}))

			for _, sb := range []*sandboxv1.Sandbox{over, named, seeded} {
				ct.DeletedGoes(sb)
			}
			Eventually(ct.QuotaUsed(q)).Should(Equal([2]int32{0, 0}))
			_, kept := local.Peek(foreign.ID)
			Expect(kept).To(BeTrue(), "the container holding the name was removed")
		})

		It("deletes one its namespace's policy refuses its pinned host", func() {
			q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(2))})
			ct.LabelNamespace(ns, "sandbox.roboco.io/tenant", ns)
			ct.NewPolicy(ns, ns, sandboxv1.SandboxPolicySpec{DockerHostSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "elsewhere"}}})
			sb := ct.NewSandbox(ns, "refused", "wait-policy", "redis")
			sb.Spec.DockerHost = ct.DefaultDockerHostName
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/PolicyViolation"))
			ct.DeletedGoes(sb)
			Expect(ct.QuotaUsed(q)()).To(Equal([2]int32{0, 0}))
		})
	})
})
