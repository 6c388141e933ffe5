package controllertest

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// NewQuota makes the namespace's SandboxQuota of hard amounts.
func NewQuota(ns string, hard sandboxv1.QuotaAmounts) *sandboxv1.SandboxQuota {
	q := &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: sandboxv1.SandboxQuotaSpec{Hard: hard}}
	gomega.ExpectWithOffset(1, k8sClient.Create(ctx, q)).To(gomega.Succeed())
	return q
}

// QuotaSummary is a quota's status.summary, as kubectl get shows it.
func QuotaSummary(q *sandboxv1.SandboxQuota) func() string {
	return func() string {
		got := &sandboxv1.SandboxQuota{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(q), got); err != nil {
			return err.Error()
		}
		return got.Status.Summary
	}
}

// PoolReady is "Reason: message" of a pool's Ready condition.
func PoolReady(p *sandboxv1.SandboxPool) string {
	for _, c := range GetPool(p).Status.Conditions {
		if c.Type == sandboxv1.ConditionReady {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// QuotaUsed is what a quota's status says its namespace uses: Sandboxes and
// pool members.
func QuotaUsed(q *sandboxv1.SandboxQuota) func() [2]int32 {
	return func() [2]int32 {
		got := &sandboxv1.SandboxQuota{}
		gomega.ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKeyFromObject(q), got)).To(gomega.Succeed())
		return [2]int32{ptr.Deref(got.Status.Used.Sandboxes, 0), ptr.Deref(got.Status.Used.PoolMembers, 0)}
	}
}

// LabelNamespace sets a label on ns, as the operator does (tenants cannot).
func LabelNamespace(ns, key, value string) {
	n := &corev1.Namespace{}
	gomega.ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Name: ns}, n)).To(gomega.Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = value
	gomega.ExpectWithOffset(1, k8sClient.Patch(ctx, n, patch)).To(gomega.Succeed())
}

// NewPolicy makes a SandboxPolicy for the namespaces labelled sandbox.roboco.io/tenant=nsLabel.
func NewPolicy(name, nsLabel string, spec sandboxv1.SandboxPolicySpec) {
	spec.NamespaceSelector = sandboxv1.NamespaceLabels{MatchLabels: map[string]string{"sandbox.roboco.io/tenant": nsLabel}}
	p := &sandboxv1.SandboxPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	gomega.ExpectWithOffset(1, k8sClient.Create(ctx, p)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func() { _ = k8sClient.Delete(ctx, p) })
}
