package sandbox_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// A pass that makes a Sandbox's Secret as the Sandbox is torn down elsewhere (a
// replica finishing a pass after handing its host's Lease on) leaves a Secret
// no teardown sees again; the API server's garbage collector is not relied on
// (envtest has none).
var _ = Describe("A credentials Secret its Sandbox left behind", func() {
	var (
		ns   string
		stop func()
	)
	BeforeEach(func() {
		ns = ct.NewNamespace()
		stop = ct.StartManager(ct.NewHost(), ct.TestOptions())
	})
	AfterEach(func() { stop() })

	It("is deleted when it appears after its Sandbox is gone", func() {
		gone := ct.NewSandbox(ns, "late", "late-1", "redis")
		Expect(k8sClient.Create(ctx, gone)).To(Succeed())
		ct.WaitReady(gone)
		ct.DeletedGoes(gone)
		late := leftoverSecret(gone)
		Expect(k8sClient.Create(ctx, late)).To(Succeed())
		Eventually(secretGone(ns, late.Name)).Should(BeTrue(), "the credentials of a gone Sandbox outlived it")
	})

	It("gives way to a new Sandbox of the same name, which is Ready with its own", func() {
		gone := ct.NewSandbox(ns, "again", "again-1", "redis")
		Expect(k8sClient.Create(ctx, gone)).To(Succeed())
		ct.WaitReady(gone)
		ct.DeletedGoes(gone)
		stop() // nothing sees the leftover until the new Sandbox's pass does
		Expect(k8sClient.Create(ctx, leftoverSecret(gone))).To(Succeed())
		stop = ct.StartManager(ct.NewHost(), ct.TestOptions())
		next := ct.NewSandbox(ns, "again", "again-2", "redis")
		Expect(k8sClient.Create(ctx, next)).To(Succeed())
		got := ct.WaitReady(next)
		s := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, ct.KeyOf(ns, "again-sandbox"), s)).To(Succeed())
		Expect(metav1.IsControlledBy(s, got)).To(BeTrue(), "the Secret is the new Sandbox's")
	})

	It("is kept while its Sandbox lives, even when the Secret of that name is another's", func() {
		foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine-sandbox",
			Labels: map[string]string{ct.SecretLabel: "not-a-uid"}}}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		sb := ct.NewSandbox(ns, "mine", "mine-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/SecretConflict"))
		Consistently(secretGone(ns, "mine-sandbox"), "1s").Should(BeFalse(), "a Secret no Sandbox controls is not ours to delete")
	})
})

// leftoverSecret is the Secret a late pass of gone makes: labelled and
// controlled as the manager makes them.
func leftoverSecret(gone *sandboxv1.Sandbox) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gone.Namespace, Name: sandboxv1.SecretName(gone),
		Labels: map[string]string{ct.SecretLabel: string(gone.UID)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: sandboxv1.GroupVersion.String(), Kind: "Sandbox",
			Name: gone.Name, UID: gone.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		StringData: map[string]string{"REDIS_PASSWORD": "stale"}}
}

func secretGone(ns, name string) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Secret{}))
	}
}
