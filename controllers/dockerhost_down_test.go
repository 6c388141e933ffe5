package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

var _ = Describe("A Docker host that stops answering", func() {
	It("has its settled Sandboxes report DockerUnavailable, with nothing else making them look again", func() {
		ns := ct.NewNamespace()
		local, b := ct.NewHost(), ct.NewHost()
		ct.RegisterHost("down-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"down-b": b})
		sb := ct.NewSandbox(ns, "settled", "settled-1", "redis")
		sb.Spec.DockerHost = "down-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Eventually(func() bool {
			return meta.IsStatusConditionTrue(ct.DockerHost("down-b").Status.Conditions, sandboxv1.ConditionReady)
		}).Should(BeTrue())

		// Note: the fake's event stream goes on (faults spare it), and the Sandbox is
		// left alone: only the host's next observation, brought forward by a label
		// rather than waited for, can tell it.
		DeferCleanup(b.Inject(fake.Fault{Err: dd.ErrUnavailable}))
		h := ct.DockerHost("down-b")
		patch := client.MergeFrom(h.DeepCopy())
		h.Labels = map[string]string{"observed": time.Now().Format("150405.000000")}
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())

		Eventually(func() bool {
			return meta.IsStatusConditionFalse(ct.DockerHost("down-b").Status.Conditions, sandboxv1.ConditionReady)
		}).Should(BeTrue())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerUnavailable"))
		Expect(b.Calls(fake.VerbRemove)).To(BeZero())
	})
})
