package crd_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func pool(ns, name string) *sandboxv1.SandboxPool {
	return &sandboxv1.SandboxPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       sandboxv1.SandboxPoolSpec{Service: sandboxv1.ServiceSpec{Engine: "postgres"}},
	}
}

var _ = Describe("SandboxPool in the CRD", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("defaults replicas to 1 and scales with kubectl scale, as a Deployment does", func() {
		p := pool(ns, "pg")
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(*p.Spec.Replicas).To(Equal(int32(1)))

		_, err := env.Kubectl("scale", "sbxpool/pg", "-n", ns, "--replicas=7")
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		Expect(*p.Spec.Replicas).To(Equal(int32(7)))

		p.Status.Replicas, p.Status.ReadyReplicas, p.Status.Claimed = 7, 5, 3
		Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
		out, err := env.Kubectl("get", "sbxpool", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "ENGINE", "DESIRED", "READY", "CLAIMED", "AGE"}))
		Expect(strings.Fields(lines[1])[:5]).To(Equal([]string{"pg", "postgres", "7", "5", "3"}))
	})

	DescribeTable("refuses an invalid pool with a message naming what is allowed",
		func(mutate func(p *sandboxv1.SandboxPool), want string) {
			p := pool(ns, "bad")
			mutate(p)
			err := k8sClient.Create(ctx, p)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not refused as invalid: %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("more than 100 replicas", func(p *sandboxv1.SandboxPool) { p.Spec.Replicas = ptr.To[int32](101) },
			"should be less than or equal to 100"),
		Entry("the host network", func(p *sandboxv1.SandboxPool) { p.Spec.Network = "host" },
			"network must not be host, none or bridge"),
		Entry("a feature of another engine", func(p *sandboxv1.SandboxPool) {
			p.Spec.Service.Features = []sandboxv1.Feature{"search"}
		}, "postgres features must be among"),
		Entry("a zero maxAge", func(p *sandboxv1.SandboxPool) { p.Spec.MaxAge = &metav1.Duration{} },
			"maxAge must be a positive duration"),
	)

	It("refuses a Sandbox pool policy outside Auto and Never", func() {
		u := sandbox(ns, "policy")
		set(u, map[string]any{"policy": "Sometimes"}, "spec", "pools")
		err := k8sClient.Create(ctx, u)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not refused as invalid: %v", err)
		Expect(err.Error()).To(ContainSubstring(`supported values: "Auto", "Never"`))
	})
})
