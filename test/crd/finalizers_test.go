package crd_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The shipped teardown-finalizers ValidatingAdmissionPolicy on the real API
// server: a tenant (the sandbox-editor role) cannot remove the finalizer that
// holds a Sandbox or pool until its containers are gone — stripped, the object
// would vanish with its containers running and its quota room freed; who may
// write the object's status (the manager, a cluster admin) can.
var _ = Describe("Teardown finalizer admission", Ordered, func() {
	var ns string
	var tenant, manager client.Client
	BeforeAll(func() {
		Expect(applyManifest(admissionPolicies())).To(Succeed())
		_, err := env.Kubectl("apply", "-f", "../../config/rbac/sandbox_editor_role.yaml")
		Expect(err).NotTo(HaveOccurred())
		ns = newNamespace()
		bind(ns, "tenant-a", "ClusterRole", "sandbox-editor")
		statusWriter := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "status-writer", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{sandboxv1.GroupVersion.Group}, Resources: []string{"sandboxes", "sandboxes/status", "sandboxpools", "sandboxpools/status"},
			Verbs: []string{"get", "update", "patch"}}}}
		Expect(k8sClient.Create(ctx, statusWriter)).To(Succeed())
		bind(ns, "manager-a", "Role", "status-writer")
		tenant, manager = as("tenant-a"), as("manager-a")
	})

	It("refuses a tenant that strips a Sandbox's or a pool's finalizer, naming who removes it", func() {
		// Note: the API server loads the policy and its binding a moment after
		// they are made; a strip let through before is tried again on another.
		// Until then, the SandboxPolicy one may refuse the create itself.
		var sb *sandboxv1.Sandbox
		Eventually(func() string {
			var err error
			if sb, err = tryHeld(ns, ""); err != nil {
				return err.Error()
			}
			return stripErr(tenant, sb)
		}, 60*time.Second, 200*time.Millisecond).Should(ContainSubstring("only the sandbox controller removes the finalizer sandbox.roboco.io/teardown of sandboxes " + ns + "/stripped-"))
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Expect(stripErr(tenant, sb)).To(ContainSubstring("it goes once its containers are gone"), "a Sandbox being deleted too")

		p := pool(ns, "warm")
		p.Finalizers = []string{"sandbox.roboco.io/pool-teardown"}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(stripErr(tenant, p)).To(ContainSubstring("the finalizer sandbox.roboco.io/pool-teardown of sandboxpools"))
	})

	It("lets the tenant make any other edit of a Sandbox it may not strip", func() {
		sb := held(ns, "labelled")
		Eventually(func() error {
			cur := &sandboxv1.Sandbox{}
			if err := tenant.Get(ctx, client.ObjectKeyFromObject(sb), cur); err != nil {
				return err
			}
			cur.Labels = map[string]string{"team": "a"}
			return tenant.Update(ctx, cur)
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("lets who may write the status (the manager) and a cluster admin remove it", func() {
		for _, c := range []client.Client{manager, k8sClient} {
			sb := held(ns, "released")
			Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
			Expect(stripErr(c, sb)).To(BeEmpty())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), &sandboxv1.Sandbox{}))
			}, 30*time.Second, 200*time.Millisecond).Should(BeTrue())
		}
	})
})

// held makes a Sandbox that carries the teardown finalizer, as the manager
// leaves it (name "": generated, stripped-*).
func held(ns, name string) *sandboxv1.Sandbox {
	sb, err := tryHeld(ns, name)
	Expect(err).NotTo(HaveOccurred())
	return sb
}

func tryHeld(ns, name string) (*sandboxv1.Sandbox, error) {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: "stripped-", Namespace: ns, Finalizers: []string{sandboxv1.SandboxFinalizer}},
		Spec: sandboxv1.SandboxSpec{AgentID: "fin-1", Services: []sandboxv1.ServiceSpec{{Engine: sandboxv1.EngineRedis}}}}
	return sb, k8sClient.Create(ctx, sb)
}

// stripErr removes obj's finalizers as c, and says why that was refused ("": it was not).
func stripErr(c client.Client, obj client.Object) string {
	cur := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err.Error()
	}
	cur.SetFinalizers(nil)
	if err := c.Update(ctx, cur); err != nil {
		return err.Error()
	}
	return ""
}

// bind grants user the role of kind in ns.
func bind(ns, user, kind, role string) {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}}
	Expect(k8sClient.Create(ctx, rb)).To(Succeed())
}

// as is a client that acts as user (impersonated by the suite's admin).
func as(user string) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}
