package controllers_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

func newQuota(ns string, hard sandboxv1.QuotaAmounts) *sandboxv1.SandboxQuota {
	q := &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: sandboxv1.SandboxQuotaSpec{Hard: hard}}
	ExpectWithOffset(1, k8sClient.Create(ctx, q)).To(Succeed())
	return q
}

// quotaSummary is a quota's status.summary, as kubectl get shows it.
func quotaSummary(q *sandboxv1.SandboxQuota) func() string {
	return func() string {
		got := &sandboxv1.SandboxQuota{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(q), got); err != nil {
			return err.Error()
		}
		return got.Status.Summary
	}
}

// namespaceContainers lists every container of ns's Sandboxes and pools on host.
func namespaceContainers(host *engineSim, ns string) func() int {
	return func() int {
		cs, err := host.List(ctx, map[string]string{shost.LabelNamespace: ns})
		Expect(err).NotTo(HaveOccurred())
		return len(cs)
	}
}

// readiness counts ns's Sandboxes by their Ready condition's reason.
func readiness(ns string) func() map[string]int {
	return func() map[string]int {
		var list sandboxv1.SandboxList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		out := map[string]int{}
		for _, sb := range list.Items {
			reason := "none"
			for _, c := range sb.Status.Conditions {
				if c.Type == sandboxv1.ConditionReady {
					reason = c.Reason
				}
			}
			out[reason]++
		}
		return out
	}
}

var _ = Describe("SandboxQuota", func() {
	var (
		host *engineSim
		ns   string
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
		stop := startManager(host, testOptions())
		DeferCleanup(func() { stop() })
	})

	It("admits no more Sandboxes than its hard count, even created at once, and admits the next when one goes", func() {
		q := newQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](3)})
		var sbs []*sandboxv1.Sandbox
		for i := range 12 {
			sb := newSandbox(ns, fmt.Sprintf("q%d", i), fmt.Sprintf("q%d-%s", i, ns), "redis")
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			sbs = append(sbs, sb)
		}
		Eventually(readiness(ns)).Should(Equal(map[string]int{sandboxv1.ReasonReady: 3, sandboxv1.ReasonQuotaExceeded: 9}))
		Consistently(namespaceContainers(host, ns), 2*time.Second, 50*time.Millisecond).Should(Equal(3))
		Expect(quotaSummary(q)()).To(Equal("sandboxes 3/3"))

		var waiting *sandboxv1.Sandbox
		for _, sb := range sbs {
			if c := conditionOf(sb, sandboxv1.ConditionReady); c.Reason == sandboxv1.ReasonQuotaExceeded {
				waiting = sb
				Expect(c.Message).To(ContainSubstring("exceeded SandboxQuota team: sandboxes: used 3, requested 1, hard 3"))
				Expect(condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/QuotaExceeded"))
				Expect(containersOf(host, sb)).To(BeEmpty(), "a waiting Sandbox has a container")
				err := k8sClient.Get(ctx, keyOf(ns, sb.Name+"-sandbox"), &corev1Secret{})
				Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a waiting Sandbox has a Secret (%v)", err)
			}
		}
		Expect(waiting).NotTo(BeNil())

		var readyOne *sandboxv1.Sandbox
		for _, sb := range sbs {
			if sandboxv1.IsReady(get(sb)) {
				readyOne = sb
				break
			}
		}
		Expect(k8sClient.Delete(ctx, readyOne)).To(Succeed())
		Eventually(gone(readyOne)).Should(BeTrue())
		Eventually(readiness(ns)).Should(Equal(map[string]int{sandboxv1.ReasonReady: 3, sandboxv1.ReasonQuotaExceeded: 8}))
		Expect(namespaceContainers(host, ns)()).To(Equal(3))
	})

	It("counts memory, pool members included, and fills a pool only as far as its quota admits", func() {
		q := newQuota(ns, sandboxv1.QuotaAmounts{PoolMembers: ptr.To[int32](2), Memory: ptr.To(resource.MustParse("1Gi"))})
		pool := newPool(ns, "redis", "redis", 3)
		pool.Spec.Service.Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("256Mi"))}
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		Eventually(func() string { return poolReady(pool) }).Should(HavePrefix("QuotaExceeded: exceeded SandboxQuota team: poolMembers: used 0, requested 3, hard 2"))
		Eventually(quotaSummary(q)).Should(Equal("poolMembers 2/2, memory 512Mi/1Gi"))

		big := newSandbox(ns, "big", "big-"+ns, "redis", "postgres")
		for i := range big.Spec.Services {
			big.Spec.Services[i].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("300Mi"))}
		}
		Expect(k8sClient.Create(ctx, big)).To(Succeed())
		Eventually(condition(big, sandboxv1.ConditionReady)).Should(Equal("False/QuotaExceeded"))
		Expect(conditionOf(big, sandboxv1.ConditionReady).Message).To(ContainSubstring("memory: used 512Mi, requested 600Mi, hard 1Gi"))

		small := newSandbox(ns, "small", "small-"+ns, "redis")
		small.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("128Mi"))}
		Expect(k8sClient.Create(ctx, small)).To(Succeed())
		waitReady(small)
		Eventually(quotaSummary(q)).Should(Equal("poolMembers 2/2, memory 640Mi/1Gi"))

		// Scaling the pool down frees its members' memory: the big Sandbox fits.
		patch := client.MergeFrom(getPool(pool))
		scaled := getPool(pool)
		scaled.Spec.Replicas = ptr.To[int32](0)
		Expect(k8sClient.Patch(ctx, scaled, patch)).To(Succeed())
		waitReady(big)
		Eventually(quotaSummary(q)).Should(Equal("poolMembers 0/2, memory 728Mi/1Gi"))
	})

	It("admits what already runs when a quota comes later, and drops an admission whose object is gone", func() {
		sb := newSandbox(ns, "early", "early-"+ns, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		q := newQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](0)})
		// Note: a spec change makes the running Sandbox pass again; it stays.
		patch := client.MergeFrom(get(sb))
		edited := get(sb)
		edited.Spec.TTL = &metav1.Duration{Duration: time.Hour}
		Expect(k8sClient.Patch(ctx, edited, patch)).To(Succeed())
		Eventually(quotaSummary(q)).Should(Equal("sandboxes 1/0"))
		Consistently(condition(sb, sandboxv1.ConditionReady), time.Second, 50*time.Millisecond).Should(Equal("True/Ready"))

		// An admission whose object is gone (its release missed) is dropped.
		got := &sandboxv1.SandboxQuota{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		got.Status.Admitted = append(got.Status.Admitted, sandboxv1.QuotaAdmission{UID: "0d0d0d0d-gone", Kind: "Sandbox", Name: "ghost", Sandboxes: 1})
		Expect(k8sClient.Status().Update(ctx, got)).To(Succeed())
		Eventually(func() []string {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
			var names []string
			for _, a := range got.Status.Admitted {
				names = append(names, a.Name)
			}
			return names
		}).Should(BeEmpty(), "an admission its object's status records, or whose object is gone, stays in the quota")
		Expect(strings.HasPrefix(quotaSummary(q)(), "sandboxes 1/0")).To(BeTrue())
	})
})

// poolReady is "Reason: message" of a pool's Ready condition.
func poolReady(p *sandboxv1.SandboxPool) string {
	for _, c := range getPool(p).Status.Conditions {
		if c.Type == sandboxv1.ConditionReady {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}
