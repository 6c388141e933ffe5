package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

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

var _ = Describe("SandboxPolicy", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		host.AddNetwork("team-net")
		ns = ct.NewNamespace()
		ct.LabelNamespace(ns, "sandbox.roboco.io/tenant", ns)
		stop := ct.StartManager(host, ct.TestOptions())
		DeferCleanup(func() { stop() })
		DeferCleanup(func() { labelHost(ct.DefaultDockerHostName, "zone", "") })
	})

	It("places a namespace's Sandboxes only on hosts its policy allows, and stalls one pinned elsewhere", func() {
		ct.NewPolicy(ns, ns, sandboxv1.SandboxPolicySpec{DockerHostSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "b"}}})
		placed := ct.NewSandbox(ns, "placed", "placed-"+ns, "redis")
		Expect(k8sClient.Create(ctx, placed)).To(Succeed())
		// Note: until the manager has registered its own DockerHost, no host exists at all.
		Eventually(func() string {
			c := meta.FindStatusCondition(ct.Get(placed).Status.Conditions, sandboxv1.ConditionReady)
			if c == nil {
				return ""
			}
			return c.Reason + ": " + c.Message
		}).Should(And(HavePrefix("Unschedulable: "), ContainSubstring("the namespace's SandboxPolicy does not allow")))

		pinned := ct.NewSandbox(ns, "pinned", "pinned-"+ns, "redis")
		pinned.Spec.DockerHost = ct.DefaultDockerHostName
		Expect(k8sClient.Create(ctx, pinned)).To(Succeed())
		Eventually(ct.Condition(pinned, sandboxv1.ConditionStalled)).Should(Equal("True/PolicyViolation"))
		msg := ct.ConditionOf(pinned, sandboxv1.ConditionStalled).Message
		Expect(msg).To(ContainSubstring("spec.dockerHost " + ct.DefaultDockerHostName))
		Expect(msg).To(ContainSubstring("allows namespace " + ns + " only DockerHosts matching zone=b"))
		Consistently(func() int { return len(ct.ContainersOf(host, pinned)) }, time.Second, 50*time.Millisecond).Should(BeZero())

		// The operator admits the host: both start.
		labelHost(ct.DefaultDockerHostName, "zone", "b")
		ct.WaitReady(placed)
		ct.WaitReady(pinned)
	})

	It("gives a namespace its own default network and refuses another", func() {
		ct.NewPolicy(ns, ns, sandboxv1.SandboxPolicySpec{Networks: []string{"team-net"}, DefaultNetwork: "team-net"})
		own := ct.NewSandbox(ns, "own", "own-"+ns, "redis")
		Expect(k8sClient.Create(ctx, own)).To(Succeed())
		got := ct.WaitReady(own)
		c, ok := host.Peek(got.Status.Services[0].ContainerID)
		Expect(ok).To(BeTrue())
		Expect(c.Networks).To(HaveKey("team-net"))

		// Without the admission policy (not installed here), the manager refuses it.
		shared := ct.NewSandbox(ns, "shared", "shared-"+ns, "redis")
		shared.Spec.Network = ct.TestNetwork
		Expect(k8sClient.Create(ctx, shared)).To(Succeed())
		Eventually(ct.Condition(shared, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(ct.ConditionOf(shared, sandboxv1.ConditionStalled).Message).To(ContainSubstring(
			`network "` + ct.TestNetwork + `" is not allowed in namespace ` + ns + ` by SandboxPolicy ` + ns + `; allowed: team-net`))
		Expect(ct.ContainersOf(host, shared)).To(BeEmpty())
	})
})
