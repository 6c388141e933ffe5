package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// quotaUsed is what a quota's status says its namespace uses: Sandboxes and
// pool members.
func quotaUsed(q *sandboxv1.SandboxQuota) func() [2]int32 {
	return func() [2]int32 {
		got := &sandboxv1.SandboxQuota{}
		ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		return [2]int32{ptr.Deref(got.Status.Used.Sandboxes, 0), ptr.Deref(got.Status.Used.PoolMembers, 0)}
	}
}

// deleteHost deletes a DockerHost and waits until it is gone; forced strips
// its in-use finalizer, as an operator who gave up on the host would.
func deleteHost(name string, forced bool) {
	ExpectWithOffset(1, k8sClient.Delete(ctx, dockerHost(name))).To(Succeed())
	EventuallyWithOffset(1, func() bool {
		h := &sandboxv1.DockerHost{}
		err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, h)
		if err == nil && forced {
			patch := client.MergeFrom(h.DeepCopy())
			h.Finalizers = nil
			_ = k8sClient.Patch(ctx, h, patch)
		}
		return apierrors.IsNotFound(err)
	}, 45*time.Second).Should(BeTrue(), "DockerHost %s not gone", name)
}

// eventMessages lists the notes of the events about obj.
func eventMessages(obj client.Object) func() []string {
	return eventsAbout(obj, func(e eventsv1.Event) string { return e.Note })
}

func poolGone(p *sandboxv1.SandboxPool) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &sandboxv1.SandboxPool{}))
	}
}

// deletedGoes deletes sb and expects it gone with its Secret, within a deadline
// that no wait of it may stretch.
func deletedGoes(sb *sandboxv1.Sandbox) {
	ExpectWithOffset(1, k8sClient.Delete(ctx, sb)).To(Succeed())
	EventuallyWithOffset(1, gone(sb), 30*time.Second).Should(BeTrue(), "a deleted Sandbox that waits was kept")
	EventuallyWithOffset(1, func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, keyOf(sb.Namespace, sb.Name+"-sandbox"), &corev1Secret{}))
	}).Should(BeTrue(), "its Secret outlived it")
}

// Deletion always completes: whatever a Sandbox or pool waits for (a host, a
// quota, a policy, a name, an init source), what it never made is not waited
// for, and its quota's room is released.
var _ = Describe("Deleting a Sandbox or pool that waits", func() {
	var ns string
	var local, b *engineSim
	BeforeEach(func() {
		ns = newNamespace()
		local, b = newHost(), newHost()
	})

	It("lets a Sandbox pinned to a cordoned host go once that host's DockerHost was deleted", func() {
		q := newQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(5))})
		registerHost("wait-b", nil, nil)
		fleetOf(local, map[string]*engineSim{"wait-b": b})
		setHost("wait-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := newSandbox(ns, "pinned", "wait-pinned", "redis")
		sb.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))

		deleteHost("wait-b", false)
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		deletedGoes(sb)
		Expect(quotaUsed(q)()).To(Equal([2]int32{0, 0}))
		Expect(b.Calls(fake.VerbCreateContainer)).To(BeZero())
		Expect(eventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventDockerHostReleased), "it made nothing to leave behind")
	})

	It("lets a Sandbox go whose DockerHost was forced away, naming the containers it left there", func() {
		q := newQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(5))})
		registerHost("wait-b", nil, nil)
		fleetOf(local, map[string]*engineSim{"wait-b": b})
		sb := newSandbox(ns, "made", "wait-made", "redis")
		sb.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID
		Expect(quotaUsed(q)()).To(Equal([2]int32{1, 0}))

		deleteHost("wait-b", true)
		deletedGoes(sb)
		Eventually(quotaUsed(q)).Should(Equal([2]int32{0, 0}))
		Eventually(eventReasons(sb)).Should(ContainElement(sandboxv1.EventDockerHostReleased))
		_, left := b.Peek(id)
		Expect(left).To(BeTrue(), "a container was removed on a host no DockerHost names")
		Expect(eventMessages(sb)()).To(ContainElement(And(ContainSubstring("DockerHost wait-b was deleted"), ContainSubstring(dd.ShortID(id)))))
	})

	It("lets a pool pinned to a cordoned host go once its DockerHost was deleted; waiting, it holds no quota", func() {
		q := newQuota(ns, sandboxv1.QuotaAmounts{PoolMembers: ptr.To(int32(5))})
		registerHost("wait-b", nil, nil)
		fleetOf(local, map[string]*engineSim{"wait-b": b})
		setHost("wait-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		pool := newPool(ns, "pinned", "redis", 3)
		pool.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(func() string { return poolReady(pool) }).Should(HavePrefix(sandboxv1.ReasonUnschedulable + ": "))
		// Note: the pass that says it waits wrote its quota before.
		Expect(quotaUsed(q)()).To(Equal([2]int32{0, 0}), "a pool that makes nothing keeps room from others")

		deleteHost("wait-b", false)
		Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
		Eventually(poolGone(pool), 30*time.Second).Should(BeTrue(), "a deleted pool on a deleted DockerHost was kept")
		Expect(quotaUsed(q)()).To(Equal([2]int32{0, 0}))
		Expect(members(b, pool)).To(BeEmpty())
	})

	It("lets a Sandbox and a pool go whose DockerHost was deleted while no manager ran", func() {
		q := newQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(5)), PoolMembers: ptr.To(int32(5))})
		registerHost("wait-b", nil, nil)
		stop := fleetOf(local, map[string]*engineSim{"wait-b": b})
		setHost("wait-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		sb := newSandbox(ns, "pinned", "wait-restart", "redis")
		sb.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		pool := newPool(ns, "pinned", "redis", 2)
		pool.Spec.DockerHost = "wait-b"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
		Eventually(func() string { return poolReady(pool) }).Should(HavePrefix(sandboxv1.ReasonUnschedulable + ": "))
		Expect(getPool(pool).Finalizers).NotTo(BeEmpty())

		stop()
		deleteHost("wait-b", true)
		fleetOf(local, nil)
		deletedGoes(sb)
		Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
		Eventually(poolGone(pool), 30*time.Second).Should(BeTrue(), "a deleted pool on a DockerHost deleted meanwhile was kept")
		Expect(quotaUsed(q)()).To(Equal([2]int32{0, 0}))
	})

	Context("on a host that answers", func() {
		BeforeEach(func() {
			stop := startManager(local, testOptions())
			DeferCleanup(func() { stop() })
		})

		It("deletes one that waits for quota, a name or an init source, and touches nothing else", func() {
			q := newQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(2))})
			foreign, err := local.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-wait-name", Image: "redis:8-alpine"}, true)
			Expect(err).NotTo(HaveOccurred())
			named := newSandbox(ns, "named", "wait-name", "redis")
			Expect(k8sClient.Create(ctx, named)).To(Succeed())
			Eventually(condition(named, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
			seeded := seeded(newSandbox(ns, "seeded", "wait-init", "redis"), "absent")
			Expect(k8sClient.Create(ctx, seeded)).To(Succeed())
			Eventually(condition(seeded, sandboxv1.ConditionStalled)).Should(Equal("True/InitFailed"))
			over := newSandbox(ns, "over", "wait-quota", "redis")
			Expect(k8sClient.Create(ctx, over)).To(Succeed())
			Eventually(condition(over, sandboxv1.ConditionReady)).Should(Equal("False/QuotaExceeded"))
			Expect(quotaUsed(q)()).To(Equal([2]int32{2, 0}))

			for _, sb := range []*sandboxv1.Sandbox{over, named, seeded} {
				deletedGoes(sb)
			}
			Eventually(quotaUsed(q)).Should(Equal([2]int32{0, 0}))
			_, kept := local.Peek(foreign.ID)
			Expect(kept).To(BeTrue(), "the container holding the name was removed")
		})

		It("deletes a pool that waits for quota", func() {
			newQuota(ns, sandboxv1.QuotaAmounts{PoolMembers: ptr.To(int32(0))})
			pool := newPool(ns, "over", "redis", 2)
			Expect(k8sClient.Create(ctx, pool)).To(Succeed())
			Eventually(func() string { return poolReady(pool) }).Should(HavePrefix(sandboxv1.ReasonQuotaExceeded + ": "))
			Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
			Eventually(poolGone(pool), 30*time.Second).Should(BeTrue())
		})

		It("deletes one its namespace's policy refuses its pinned host", func() {
			q := newQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(2))})
			labelNamespace(ns, "sandbox.roboco.io/tenant", ns)
			newPolicy(ns, ns, sandboxv1.SandboxPolicySpec{DockerHostSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "elsewhere"}}})
			sb := newSandbox(ns, "refused", "wait-policy", "redis")
			sb.Spec.DockerHost = controllers.DefaultDockerHostName
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/PolicyViolation"))
			deletedGoes(sb)
			Expect(quotaUsed(q)()).To(Equal([2]int32{0, 0}))
		})
	})
})
