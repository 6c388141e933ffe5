package crd_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

var _ = Describe("kubectl against the CRD", func() {
	It("shows the printer columns, the short name and the Ready condition", func() {
		ns := newNamespace()
		sb := &sandboxv1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "cols", Namespace: ns},
			Spec: sandboxv1.SandboxSpec{AgentID: "be-dev-7", Services: []sandboxv1.ServiceSpec{
				{Engine: "postgres"}, {Engine: "redis"}}},
		}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		// The columns read status written through the status subresource.
		sb.Status.Engines = "postgres,redis"
		sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: sandboxv1.ReasonProvisioning, Message: "pulling", LastTransitionTime: metav1.Now()}}
		Expect(k8sClient.Status().Update(ctx, sb)).To(Succeed())

		out, err := env.Kubectl("get", "sbx", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines).To(HaveLen(2), out)
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "AGENT", "SERVICES", "READY", "REASON", "AGE"}))
		Expect(strings.Fields(lines[1])[:5]).To(Equal([]string{"cols", "be-dev-7", "postgres,redis", "False", "Provisioning"}))

		// The object is reachable through the "all" category too.
		out, err = env.Kubectl("get", "all", "-n", ns, "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("sandbox.sandbox.roboco.io/cols"))

		out, err = env.Kubectl("get", "sandbox", "cols", "-n", ns, "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		var got sandboxv1.Sandbox
		Expect(json.Unmarshal([]byte(out), &got)).To(Succeed())
		Expect(got.Status.Conditions).To(HaveLen(1))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), &got)).To(Succeed())
	})

	It("explains the fields with their comments", func() {
		out, err := env.Kubectl("explain", "sandbox.spec")
		Expect(err).NotTo(HaveOccurred())
		for _, want := range []string{
			"agentID\t<string> -required-",
			"agentID identifies the agent the services are for",
			"services\t<[]Object> -required-",
			"services lists the database services to run, at most one per engine",
			"ttl is a hard expiry counted from creation",
			"owner is what the Sandbox lives and dies with",
		} {
			Expect(out).To(ContainSubstring(want))
		}
		out, err = env.Kubectl("explain", "sandbox.spec.services.features")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("or modules (redis: search, json, bloom) activated and verified after start"))
	})
})
