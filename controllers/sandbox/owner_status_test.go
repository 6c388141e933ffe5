package sandbox_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// What a dashboard sees: every version of the Sandbox the API server sent to a
// watch. The real-Docker owner spec once saw Ready=True without OwnerAlive: its
// Sandbox waited Unschedulable (its host had not answered yet), and the pass that
// bound it wrote the binding alone, took the server's answer as its own status,
// and so published its first Ready without the OwnerAlive it had set.
var _ = Describe("Owner status", func() {
	It("says whether its owner runs in every status from its binding on, a Sandbox that waited Unschedulable included", func() {
		ns := ct.NewNamespace()
		local, b := ct.NewHost(), ct.NewHost()
		ct.RegisterHost("owner-status-b", nil, nil)
		ct.SeedOwner(b, "roboco-agent-waited-1")
		// Note: present, as the real spec pulled it first: the pass that binds it makes it Ready.
		b.AddImage("redis:8-alpine", ct.UpstreamImages["redis:8-alpine"])
		ct.SetHost("owner-status-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = true })
		ct.FleetOf(local, map[string]*ct.EngineSim{"owner-status-b": b})
		wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: ct.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &sandboxv1.SandboxList{}, client.InNamespace(ns))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		sb := ct.OwnedSandbox(ns, "waited", "waited-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
		ct.SetHost("owner-status-b", func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = false })

		var bound, silent []string // versions bound to its host; those that say nothing of its owner
		for {
			var ev watch.Event
			Eventually(w.ResultChan(), 30*time.Second).Should(Receive(&ev))
			got, ok := ev.Object.(*sandboxv1.Sandbox)
			Expect(ok).To(BeTrue(), "a %s event of %T", ev.Type, ev.Object)
			if got.Status.DockerHost == nil {
				continue // placement's, before its host saw it
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, sandboxv1.ConditionReady)
			seen := fmt.Sprintf("%s (Ready %s/%s)", got.ResourceVersion, ready.Status, ready.Reason)
			bound = append(bound, seen)
			if owner := meta.FindStatusCondition(got.Status.Conditions, sandboxv1.ConditionOwnerAlive); owner == nil {
				silent = append(silent, seen)
			} else {
				Expect(owner.Status).To(Equal(metav1.ConditionTrue), "version %s: %+v", got.ResourceVersion, owner)
			}
			if ready.Status == metav1.ConditionTrue {
				break
			}
		}
		Expect(silent).To(BeEmpty(), "of the versions bound to its host %v, these say nothing of its owner", bound)
		Expect(ct.Get(sb).Spec.DockerHost).To(Equal("owner-status-b"))
	})
})
