package sandbox_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// What GitOps tools and dashboards read: kstatus (cli-utils), computed on every
// version of the object the API server sent to a watch, over a whole lifecycle.
var _ = Describe("kstatus", func() {
	It("is InProgress until the first status, Failed when stalled, Current only when Ready for the generation, Terminating while deleted", func() {
		host := ct.NewHost()
		ns := ct.NewNamespace()
		ct.StartManager(host, ct.TestOptions())
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: ct.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(sandboxv1.GroupVersion.WithKind("SandboxList"))
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		sb := ct.NewSandbox(ns, "kstatus", "kstatus-1", "postgres")
		big := resource.MustParse("64Gi") // above the operator's maximum: stalls
		sb.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: &big}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())

		var seen []status.Status
		next := func() watch.EventType {
			var ev watch.Event
			EventuallyWithOffset(1, w.ResultChan(), 20*time.Second).Should(Receive(&ev))
			u := ev.Object.(*unstructured.Unstructured)
			res, err := status.Compute(u)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			ExpectWithOffset(1, res.Status).To(Equal(expectedKstatus(u)), "%s event, generation %d: kstatus says %s (%s) on %v",
				ev.Type, u.GetGeneration(), res.Status, res.Message, u.Object["status"])
			if len(seen) == 0 || seen[len(seen)-1] != res.Status {
				seen = append(seen, res.Status)
			}
			return ev.Type
		}
		waitFor := func(want status.Status) {
			for len(seen) == 0 || seen[len(seen)-1] != want {
				next()
			}
		}
		waitFor(status.FailedStatus)

		By("fixing the spec: a new generation is InProgress until the controller saw it")
		fixed := ct.Get(sb)
		small := resource.MustParse("256Mi")
		fixed.Spec.Services[0].Resources.Memory = &small
		Expect(k8sClient.Update(ctx, fixed)).To(Succeed())
		waitFor(status.CurrentStatus)

		By("deleting it")
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		for next() != watch.Deleted {
		}
		Expect(seen).To(Equal([]status.Status{status.InProgressStatus, status.FailedStatus, status.InProgressStatus,
			status.CurrentStatus, status.TerminatingStatus}), "kstatus over the lifecycle")
	})
})

// expectedKstatus is what the API promises tools: Terminating while deleted,
// Failed when Stalled, Current only when Ready for the object's generation, else
// InProgress (a brand-new Sandbox included).
func expectedKstatus(u *unstructured.Unstructured) status.Status {
	if u.GetDeletionTimestamp() != nil {
		return status.TerminatingStatus
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	state := map[string]string{}
	for _, c := range conds {
		m := c.(map[string]any)
		state[fmt.Sprint(m["type"])] = fmt.Sprintf("%v@%v", m["status"], m["observedGeneration"])
	}
	current := fmt.Sprintf("True@%d", u.GetGeneration())
	switch {
	case observed == u.GetGeneration() && state[sandboxv1.ConditionStalled] == current:
		return status.FailedStatus
	case observed == u.GetGeneration() && state[sandboxv1.ConditionReady] == current:
		return status.CurrentStatus
	}
	return status.InProgressStatus
}
