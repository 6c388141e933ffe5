package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
)

// labelNamespace sets a label on ns, as the operator does (tenants cannot).
func labelNamespace(ns, key, value string) {
	n := &corev1.Namespace{}
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = value
	ExpectWithOffset(1, k8sClient.Patch(ctx, n, patch)).To(Succeed())
}

// labelHost sets (or, with value "", removes) a label on a DockerHost.
func labelHost(name, key, value string) {
	EventuallyWithOffset(1, func() error {
		h := &sandboxv1.DockerHost{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, h); err != nil {
			return err
		}
		patch := client.MergeFrom(h.DeepCopy())
		if h.Labels == nil {
			h.Labels = map[string]string{}
		}
		if value == "" {
			delete(h.Labels, key)
		} else {
			h.Labels[key] = value
		}
		return k8sClient.Patch(ctx, h, patch)
	}).Should(Succeed())
}

func newPolicy(name, nsLabel string, spec sandboxv1.SandboxPolicySpec) {
	spec.NamespaceSelector = sandboxv1.NamespaceLabels{MatchLabels: map[string]string{"sandbox.roboco.io/tenant": nsLabel}}
	p := &sandboxv1.SandboxPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	ExpectWithOffset(1, k8sClient.Create(ctx, p)).To(Succeed())
	DeferCleanup(func() { _ = k8sClient.Delete(ctx, p) })
}

var _ = Describe("SandboxPolicy", func() {
	var (
		host *engineSim
		ns   string
	)
	BeforeEach(func() {
		host = newHost()
		host.AddNetwork("team-net")
		ns = newNamespace()
		labelNamespace(ns, "sandbox.roboco.io/tenant", ns)
		stop := startManager(host, testOptions())
		DeferCleanup(func() { stop() })
		DeferCleanup(func() { labelHost(controllers.DefaultDockerHostName, "zone", "") })
	})

	It("places a namespace's Sandboxes only on hosts its policy allows, and stalls one pinned elsewhere", func() {
		newPolicy(ns, ns, sandboxv1.SandboxPolicySpec{DockerHostSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "b"}}})
		placed := newSandbox(ns, "placed", "placed-"+ns, "redis")
		Expect(k8sClient.Create(ctx, placed)).To(Succeed())
		// Note: until the manager has registered its own DockerHost, no host exists at all.
		Eventually(func() string {
			c := meta.FindStatusCondition(get(placed).Status.Conditions, sandboxv1.ConditionReady)
			if c == nil {
				return ""
			}
			return c.Reason + ": " + c.Message
		}).Should(And(HavePrefix("Unschedulable: "), ContainSubstring("the namespace's SandboxPolicy does not allow")))

		pinned := newSandbox(ns, "pinned", "pinned-"+ns, "redis")
		pinned.Spec.DockerHost = controllers.DefaultDockerHostName
		Expect(k8sClient.Create(ctx, pinned)).To(Succeed())
		Eventually(condition(pinned, sandboxv1.ConditionStalled)).Should(Equal("True/PolicyViolation"))
		msg := conditionOf(pinned, sandboxv1.ConditionStalled).Message
		Expect(msg).To(ContainSubstring("spec.dockerHost " + controllers.DefaultDockerHostName))
		Expect(msg).To(ContainSubstring("allows namespace " + ns + " only DockerHosts matching zone=b"))
		Consistently(func() int { return len(containersOf(host, pinned)) }, time.Second, 50*time.Millisecond).Should(BeZero())

		// The operator admits the host: both start.
		labelHost(controllers.DefaultDockerHostName, "zone", "b")
		waitReady(placed)
		waitReady(pinned)
	})

	It("gives a namespace its own default network and refuses another", func() {
		newPolicy(ns, ns, sandboxv1.SandboxPolicySpec{Networks: []string{"team-net"}, DefaultNetwork: "team-net"})
		own := newSandbox(ns, "own", "own-"+ns, "redis")
		Expect(k8sClient.Create(ctx, own)).To(Succeed())
		got := waitReady(own)
		c, ok := host.Peek(got.Status.Services[0].ContainerID)
		Expect(ok).To(BeTrue())
		Expect(c.Networks).To(HaveKey("team-net"))

		// Without the admission policy (not installed here), the manager refuses it.
		shared := newSandbox(ns, "shared", "shared-"+ns, "redis")
		shared.Spec.Network = testNetwork
		Expect(k8sClient.Create(ctx, shared)).To(Succeed())
		Eventually(condition(shared, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(conditionOf(shared, sandboxv1.ConditionStalled).Message).To(ContainSubstring(
			`network "` + testNetwork + `" is not allowed in namespace ` + ns + ` by SandboxPolicy ` + ns + `; allowed: team-net`))
		Expect(containersOf(host, shared)).To(BeEmpty())
	})
})
