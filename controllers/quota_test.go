package controllers_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// namespaceContainers lists every container of ns's Sandboxes and pools on host.
func namespaceContainers(host *ct.EngineSim, ns string) func() int {
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
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		stop := ct.StartManager(host, ct.TestOptions())
		DeferCleanup(func() { stop() })
	})

	It("admits no more Sandboxes than its hard count, even created at once, and admits the next when one goes", func() {
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](3)})
		var sbs []*sandboxv1.Sandbox
		for i := range 12 {
			sb := ct.NewSandbox(ns, fmt.Sprintf("q%d", i), fmt.Sprintf("q%d-%s", i, ns), "redis")
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			sbs = append(sbs, sb)
		}
		Eventually(readiness(ns)).Should(Equal(map[string]int{sandboxv1.ReasonReady: 3, sandboxv1.ReasonQuotaExceeded: 9}))
		Consistently(namespaceContainers(host, ns), 2*time.Second, 50*time.Millisecond).Should(Equal(3))
		Expect(ct.QuotaSummary(q)()).To(Equal("sandboxes 3/3"))

		var waiting *sandboxv1.Sandbox
		for _, sb := range sbs {
			if c := ct.ConditionOf(sb, sandboxv1.ConditionReady); c.Reason == sandboxv1.ReasonQuotaExceeded {
				waiting = sb
				Expect(c.Message).To(ContainSubstring("exceeded SandboxQuota team: sandboxes: used 3, requested 1, hard 3"))
				Expect(ct.Condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/QuotaExceeded"))
				Expect(ct.ContainersOf(host, sb)).To(BeEmpty(), "a waiting Sandbox has a container")
				err := k8sClient.Get(ctx, ct.KeyOf(ns, sb.Name+"-sandbox"), &corev1.Secret{})
				Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a waiting Sandbox has a Secret (%v)", err)
			}
		}
		Expect(waiting).NotTo(BeNil())

		var readyOne *sandboxv1.Sandbox
		for _, sb := range sbs {
			if sandboxv1.IsReady(ct.Get(sb)) {
				readyOne = sb
				break
			}
		}
		Expect(k8sClient.Delete(ctx, readyOne)).To(Succeed())
		Eventually(ct.Gone(readyOne)).Should(BeTrue())
		Eventually(readiness(ns)).Should(Equal(map[string]int{sandboxv1.ReasonReady: 3, sandboxv1.ReasonQuotaExceeded: 8}))
		Expect(namespaceContainers(host, ns)()).To(Equal(3))
	})

	It("counts memory, pool members included, and fills a pool only as far as its quota admits", func() {
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{PoolMembers: ptr.To[int32](2), Memory: ptr.To(resource.MustParse("1Gi"))})
		pool := ct.NewPool(ns, "redis", "redis", 3)
		pool.Spec.Service.Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("256Mi"))}
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		Eventually(func() string { return ct.PoolReady(pool) }).Should(HavePrefix("QuotaExceeded: exceeded SandboxQuota team: poolMembers: used 0, requested 3, hard 2"))
		Eventually(ct.QuotaSummary(q)).Should(Equal("poolMembers 2/2, memory 512Mi/1Gi"))

		big := ct.NewSandbox(ns, "big", "big-"+ns, "redis", "postgres")
		for i := range big.Spec.Services {
			big.Spec.Services[i].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("300Mi"))}
		}
		Expect(k8sClient.Create(ctx, big)).To(Succeed())
		Eventually(ct.Condition(big, sandboxv1.ConditionReady)).Should(Equal("False/QuotaExceeded"))
		Expect(ct.ConditionOf(big, sandboxv1.ConditionReady).Message).To(ContainSubstring("memory: used 512Mi, requested 600Mi, hard 1Gi"))

		small := ct.NewSandbox(ns, "small", "small-"+ns, "redis")
		small.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("128Mi"))}
		Expect(k8sClient.Create(ctx, small)).To(Succeed())
		ct.WaitReady(small)
		Eventually(ct.QuotaSummary(q)).Should(Equal("poolMembers 2/2, memory 640Mi/1Gi"))

		// Scaling the pool down frees its members' memory: the big Sandbox fits.
		patch := client.MergeFrom(ct.GetPool(pool))
		scaled := ct.GetPool(pool)
		scaled.Spec.Replicas = ptr.To[int32](0)
		Expect(k8sClient.Patch(ctx, scaled, patch)).To(Succeed())
		ct.WaitReady(big)
		Eventually(ct.QuotaSummary(q)).Should(Equal("poolMembers 0/2, memory 728Mi/1Gi"))
	})

	It("admits what already runs when a quota comes later, and drops an admission whose object is gone", func() {
		sb := ct.NewSandbox(ns, "early", "early-"+ns, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](0)})
		// Note: a spec change makes the running Sandbox pass again; it stays.
		patch := client.MergeFrom(ct.Get(sb))
		edited := ct.Get(sb)
		edited.Spec.TTL = &metav1.Duration{Duration: time.Hour}
		Expect(k8sClient.Patch(ctx, edited, patch)).To(Succeed())
		Eventually(ct.QuotaSummary(q)).Should(Equal("sandboxes 1/0"))
		Consistently(ct.Condition(sb, sandboxv1.ConditionReady), time.Second, 50*time.Millisecond).Should(Equal("True/Ready"))

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
		Expect(strings.HasPrefix(ct.QuotaSummary(q)(), "sandboxes 1/0")).To(BeTrue())
	})
})
