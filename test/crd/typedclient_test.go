package crd_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	applyv1 "github.com/roboco-sandbox/sandbox-controller/api/client/applyconfiguration/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned"
	"github.com/roboco-sandbox/sandbox-controller/api/client/informers/externalversions"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The API module's generated clients, as an orchestrator uses them, against the
// real API server with the generated CRDs.
var _ = Describe("The typed clients", func() {
	var (
		ns string
		cs *versioned.Clientset
	)
	BeforeEach(func() {
		ns = newNamespace()
		var err error
		cs, err = versioned.NewForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())
	})

	It("server-side apply a Sandbox, which a second apply by the same manager changes, and an informer's lister sees", func() {
		apply := func(memory string) *sandboxv1.Sandbox {
			svc := applyv1.ServiceSpec().WithEngine(sandboxv1.EnginePostgres)
			if memory != "" {
				svc.WithResources(applyv1.ServiceResources().WithMemory(resource.MustParse(memory)))
			}
			sb, err := cs.SandboxV1alpha1().Sandboxes(ns).Apply(ctx,
				applyv1.Sandbox("be-dev-1", ns).WithSpec(applyv1.SandboxSpec().WithAgentID("be-dev-1").WithServices(svc)),
				metav1.ApplyOptions{FieldManager: "orchestrator", Force: true})
			Expect(err).NotTo(HaveOccurred())
			return sb
		}
		sb := apply("")
		Expect(sb.Spec.Owner).NotTo(BeNil(), "the API server's defaults come back")
		Expect(sb.Status.ObservedGeneration).To(Equal(int64(-1)), "no status yet: kstatus must read InProgress")
		Expect(sandboxv1.IsReady(sb)).To(BeFalse())
		Expect(sandboxv1.SecretName(sb)).To(Equal("be-dev-1-sandbox"))

		again := apply("512Mi")
		Expect(again.Generation).To(Equal(sb.Generation + 1))
		Expect(again.Spec.Services[0].Resources.Memory.String()).To(Equal("512Mi"))

		factory := externalversions.NewSharedInformerFactoryWithOptions(cs, time.Minute, externalversions.WithNamespace(ns))
		lister := factory.Sandbox().V1alpha1().Sandboxes().Lister()
		stop := make(chan struct{})
		defer close(stop)
		factory.Start(stop)
		factory.WaitForCacheSync(stop)
		Eventually(func() ([]*sandboxv1.Sandbox, error) { return lister.Sandboxes(ns).List(labels.Everything()) }).
			Should(ConsistOf(HaveField("Generation", again.Generation)))
	})

	It("scale a pool through its scale subresource", func() {
		pools := cs.SandboxV1alpha1().SandboxPools(ns)
		_, err := pools.Apply(ctx, applyv1.SandboxPool("pg", ns).WithSpec(applyv1.SandboxPoolSpec().
			WithService(applyv1.ServiceSpec().WithEngine(sandboxv1.EnginePostgres))),
			metav1.ApplyOptions{FieldManager: "orchestrator"})
		Expect(err).NotTo(HaveOccurred())
		scale, err := pools.GetScale(ctx, "pg", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(scale.Spec.Replicas).To(Equal(int32(1)), "the default")
		scale.Spec.Replicas = 3
		_, err = pools.UpdateScale(ctx, "pg", scale, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		got, err := pools.Get(ctx, "pg", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.Replicas).To(HaveValue(Equal(int32(3))))
		_, err = pools.UpdateScale(ctx, "pg", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: ns},
			Spec: autoscalingv1.ScaleSpec{Replicas: 101}}, metav1.UpdateOptions{})
		Expect(err).To(MatchError(ContainSubstring("100")), "the CRD's maximum holds through the scale subresource")
	})
})
