package crd_test

import (
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// The shipped ValidatingAdmissionPolicy (config/admission, rendered by
// config/default) on the real API server: a namespace a SandboxPolicy selects
// may name only the policy's networks; another namespace is not judged.
var _ = Describe("SandboxPolicy admission", Ordered, func() {
	var tenant, other string
	BeforeAll(func() {
		Expect(applyManifest(admissionPolicies())).To(Succeed())

		tenant, other = newNamespace(), newNamespace()
		ns := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: tenant}, ns)).To(Succeed())
		ns.Labels = map[string]string{"sandbox.roboco.io/team": "a"}
		Expect(k8sClient.Update(ctx, ns)).To(Succeed())
		p := &sandboxv1.SandboxPolicy{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: sandboxv1.SandboxPolicySpec{
			NamespaceSelector: sandboxv1.NamespaceLabels{MatchLabels: map[string]string{"sandbox.roboco.io/team": "a"}},
			Networks:          []string{"team-a"}, DefaultNetwork: "team-a"}}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = k8sClient.Delete(ctx, p) })
	})

	It("refuses a network the namespace's policy does not allow, naming the allowed ones", func() {
		// Note: the API server loads the policy, its binding and params a moment after they are made.
		Eventually(func() string {
			u := sandbox(tenant, "other-net")
			set(u, "shared", "spec", "network")
			err := k8sClient.Create(ctx, u)
			if err == nil {
				_ = k8sClient.Delete(ctx, u)
				return "admitted"
			}
			return err.Error()
		}, 60*time.Second, 200*time.Millisecond).Should(And(
			ContainSubstring("spec.network shared is not allowed in namespace "+tenant+" by SandboxPolicy team-a; allowed: team-a"),
			ContainSubstring("denied request")))
		err := k8sClient.Create(ctx, pool(tenant, "warm"))
		Expect(err).NotTo(HaveOccurred(), "an empty network is the policy's default")
		u := pool(tenant, "warm-other")
		u.Spec.Network = "shared"
		err = k8sClient.Create(ctx, u)
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "a pool on another network: %v", err)
	})

	It("admits its own network, and judges no namespace it does not select", func() {
		u := sandbox(tenant, "own-net")
		set(u, "team-a", "spec", "network")
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		u = sandbox(other, "shared-net")
		set(u, "shared", "spec", "network")
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
	})

	It("judges no update that keeps spec.network, nor an object being deleted: what already runs stays", func() {
		testenv.AdmissionKeepsWhatRuns(GinkgoT(), env, newNamespace(), "sandbox.roboco.io/policy-test", "kept")
	})

	It("refuses a default network that is not one of its networks", func() {
		p := &sandboxv1.SandboxPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad-default"}, Spec: sandboxv1.SandboxPolicySpec{
			NamespaceSelector: sandboxv1.NamespaceLabels{MatchLabels: map[string]string{"x": "y"}},
			Networks:          []string{"a"}, DefaultNetwork: "b"}}
		err := k8sClient.Create(ctx, p)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.defaultNetwork must be one of spec.networks"))
	})
})

// admissionPolicies are the ValidatingAdmissionPolicies config/default
// renders, with their bindings, as one manifest.
func admissionPolicies() string {
	rendered, err := env.Kubectl("kustomize", "../../config/default")
	Expect(err).NotTo(HaveOccurred())
	manifest, n := testenv.AdmissionPolicies(rendered)
	Expect(n).To(Equal(4), "config/default renders two policies (SandboxPolicy, teardown finalizers) and their bindings")
	return manifest
}

// applyManifest runs kubectl apply on YAML.
func applyManifest(manifest string) error {
	f, err := writeTemp(manifest)
	if err != nil {
		return err
	}
	_, err = env.Kubectl("apply", "-f", f)
	return err
}

func writeTemp(content string) (string, error) {
	f, err := os.CreateTemp(GinkgoT().TempDir(), "manifest-*.yaml")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	_, err = f.WriteString(content)
	return f.Name(), err
}
