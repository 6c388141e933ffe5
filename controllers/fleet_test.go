package controllers_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

func hostOf(sb *sandboxv1.Sandbox) func() string {
	return func() string { return ct.Get(sb).Spec.DockerHost }
}

var _ = Describe("A fleet of Docker hosts", func() {
	var ns string
	var local, b, c *ct.EngineSim
	BeforeEach(func() {
		ns = ct.NewNamespace()
		local, b, c = ct.NewHost(), ct.NewHost(), ct.NewHost()
	})

	It("places a Sandbox beside its owner container, on the host that runs it, and serves it there", func() {
		ct.RegisterHost("fleet-b", nil, nil)
		ct.RegisterHost("fleet-c", nil, nil)
		ct.SeedOwner(b, "roboco-agent-beside-1")
		ct.FleetOf(local, map[string]*ct.EngineSim{"fleet-b": b, "fleet-c": c})

		sb := ct.OwnedSandbox(ns, "beside", "beside-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(hostOf(sb)).Should(Equal("fleet-b"))
		ct.WaitReady(sb)
		Expect(ct.ContainersOf(b, sb)).To(HaveLen(1))
		Expect(ct.ContainersOf(local, sb)).To(BeEmpty())
		Expect(ct.ContainersOf(c, sb)).To(BeEmpty())
		Expect(ct.Get(sb).Status.DockerHost.ID).To(Equal(ct.DockerHost("fleet-b").Status.Identity.ID))
	})

	It("does not guess when the owner runs on two hosts: Unschedulable until the user names one", func() {
		ct.RegisterHost("fleet-b", nil, nil)
		ct.RegisterHost("fleet-c", nil, nil)
		ct.SeedOwner(b, "roboco-agent-twice-1")
		ct.SeedOwner(c, "roboco-agent-twice-1")
		ct.FleetOf(local, map[string]*ct.EngineSim{"fleet-b": b, "fleet-c": c})

		sb := ct.OwnedSandbox(ns, "twice", "twice-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() string {
			if c := meta.FindStatusCondition(ct.Get(sb).Status.Conditions, sandboxv1.ConditionReady); c != nil {
				return c.Message
			}
			return ""
		}).
			Should(ContainSubstring("runs on Docker hosts fleet-b and fleet-c"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("False/Unschedulable"))
		Consistently(hostOf(sb), "500ms").Should(BeEmpty())

		cur := ct.Get(sb)
		cur.Spec.DockerHost = "fleet-c"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		ct.WaitReady(sb)
		Expect(ct.ContainersOf(c, sb)).To(HaveLen(1))
	})

	It("places by selector, least loaded first, and never past a host's capacity", func() {
		ct.RegisterHost("fleet-b", map[string]string{"zone": "z1"}, ptr.To[int32](2))
		ct.RegisterHost("fleet-c", map[string]string{"zone": "z1"}, ptr.To[int32](2))
		ct.FleetOf(local, map[string]*ct.EngineSim{"fleet-b": b, "fleet-c": c})

		var sbs []*sandboxv1.Sandbox
		for i := range 6 {
			sb := ct.NewSandbox(ns, fmt.Sprintf("z-%d", i), fmt.Sprintf("z-%d", i), "redis")
			sb.Spec.DockerHostSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "z1"}}
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			sbs = append(sbs, sb)
		}
		placed := func() map[string]int {
			out := map[string]int{}
			for _, sb := range sbs {
				out[ct.Get(sb).Spec.DockerHost]++
			}
			return out
		}
		Eventually(placed).Should(Equal(map[string]int{"fleet-b": 2, "fleet-c": 2, "": 2}))
		Consistently(placed, "1s").Should(Equal(map[string]int{"fleet-b": 2, "fleet-c": 2, "": 2}))
		for _, sb := range sbs {
			if ct.Get(sb).Spec.DockerHost == "" {
				Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
				Expect(ct.ConditionOf(ct.Get(sb), sandboxv1.ConditionReady).Message).To(ContainSubstring("2 has no capacity left"))
			}
		}

		h := ct.DockerHost("fleet-c")
		h.Spec.Capacity.Sandboxes = ptr.To[int32](4)
		Expect(k8sClient.Update(ctx, h)).To(Succeed())
		Eventually(placed).Should(Equal(map[string]int{"fleet-b": 2, "fleet-c": 4}))
		for _, sb := range sbs {
			ct.WaitReady(sb)
		}
		Eventually(func() int32 { return ct.DockerHost("fleet-c").Status.Allocated.Sandboxes }).Should(Equal(int32(4)))
	})

	It("reports a host that stops answering on its Sandboxes, deletes nothing, and converges when it returns", func() {
		ct.RegisterHost("fleet-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"fleet-b": b})
		sb := ct.NewSandbox(ns, "down", "down-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID

		clear := b.Inject(fake.Fault{Err: dd.ErrUnavailable})
		ct.Poke(sb) // rather than wait for the resync

		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerUnavailable"))
		Eventually(func() bool {
			return meta.IsStatusConditionFalse(ct.DockerHost("fleet-b").Status.Conditions, sandboxv1.ConditionReady)
		}, 45*time.Second).Should(BeTrue())
		Expect(b.Calls(fake.VerbRemove)).To(BeZero())
		clear()
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 45*time.Second).Should(Equal("True/Ready"))
		Expect(ct.Get(sb).Status.Services[0].ContainerID).To(Equal(id))
	})

	It("stops serving a host whose endpoint now reaches another daemon, changes nothing there, and resumes with the same containers when pointed back", func() {
		ct.RegisterHost("fleet-b", nil, nil)
		ct.RegisterHost("fleet-c", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"fleet-b": b, "fleet-c": c})
		sb := ct.NewSandbox(ns, "moved", "moved-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		identityOf := func(name string) func() string {
			return func() string {
				if i := ct.DockerHost(name).Status.Identity; i != nil {
					return i.ID
				}
				return ""
			}
		}
		Eventually(identityOf("fleet-c")).ShouldNot(BeEmpty())
		bID, cID := identityOf("fleet-b")(), identityOf("fleet-c")()
		creates, removes := c.Calls(fake.VerbCreateContainer), c.Calls(fake.VerbRemove)

		By("pointing fleet-b at fleet-c's daemon: no poke, the redial alone must tell")
		setEndpoint := func(endpoint string) {
			h := ct.DockerHost("fleet-b")
			patch := client.MergeFrom(h.DeepCopy())
			h.Spec.Endpoint = endpoint
			Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		}
		setEndpoint("unix:///fake/fleet-c")
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/WrongDockerHost"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReady).Message).To(And(ContainSubstring(bID), ContainSubstring(cID)))
		Eventually(identityOf("fleet-b")).Should(Equal(cID))
		ct.Poke(sb) // any further pass must not act on the other daemon either
		Consistently(func() int { return c.Calls(fake.VerbCreateContainer) - creates + c.Calls(fake.VerbRemove) - removes },
			2*time.Second).Should(BeZero())
		Expect(ct.ContainersOf(c, sb)).To(BeEmpty())
		Expect(ct.ContainersOf(b, sb)).To(HaveLen(1))

		By("pointing it back: the same container serves again")
		setEndpoint("unix:///fake/fleet-b")
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))
		Expect(ct.Get(sb).Status.Services[0].ContainerID).To(Equal(id))
		Eventually(identityOf("fleet-b")).Should(Equal(bID))
	})

	It("acts on nothing for a deleted DockerHost: a Sandbox pinned to its name is told so, and served once it is registered again", func() {
		ct.RegisterHost("fleet-b", nil, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"fleet-b": b})
		first := ct.NewSandbox(ns, "before", "before-1", "redis")
		first.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		ct.WaitReady(first)
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(ct.Gone(first)).Should(BeTrue())
		Expect(k8sClient.Delete(ctx, ct.DockerHost("fleet-b"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: "fleet-b"}, &sandboxv1.DockerHost{}))
		}).Should(BeTrue())
		creates := b.Calls(fake.VerbCreateContainer)

		sb := ct.NewSandbox(ns, "pinned", "pinned-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("register that DockerHost again"))
		Consistently(func() int { return b.Calls(fake.VerbCreateContainer) - creates }, 2*time.Second).Should(BeZero(),
			"a container was made for a DockerHost that no longer exists")

		By("registering it again")
		ct.RegisterHost("fleet-b", nil, nil)
		ct.WaitReady(sb)
		Expect(ct.ContainersOf(b, sb)).To(HaveLen(1))
	})

	It("keeps a deleted host, and serves its Sandboxes, until they are gone; a cordoned host takes nothing new", func() {
		h := ct.RegisterHost("fleet-b", map[string]string{"zone": "zb"}, nil)
		ct.FleetOf(local, map[string]*ct.EngineSim{"fleet-b": b})
		sb := ct.NewSandbox(ns, "kept", "kept-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)

		cordoned := ct.DockerHost("fleet-b")
		cordoned.Spec.Unschedulable = true
		Expect(k8sClient.Update(ctx, cordoned)).To(Succeed())
		Eventually(func() string {
			return string(meta.FindStatusCondition(ct.DockerHost("fleet-b").Status.Conditions, sandboxv1.ConditionSchedulable).Reason)
		}).Should(Equal(sandboxv1.ReasonCordoned))
		other := ct.NewSandbox(ns, "elsewhere", "elsewhere-1", "redis")
		other.Spec.DockerHostSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "zb"}}
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(ct.Condition(other, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
		Expect(ct.ConditionOf(ct.Get(other), sandboxv1.ConditionReady).Message).To(ContainSubstring("1 is cordoned"))

		Expect(k8sClient.Delete(ctx, h)).To(Succeed())
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(h), &sandboxv1.DockerHost{}) }, "1s").Should(Succeed())
		Expect(ct.Get(sb).Status.Conditions).To(ContainElement(HaveField("Reason", sandboxv1.ReasonReady)))
		uid := string(ct.Get(sb).UID)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Expect(ct.ContainersByUID(b, uid)()).To(BeEmpty())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), &sandboxv1.DockerHost{}))
		}, 45*time.Second).Should(BeTrue(), "the host outlived its last Sandbox")
	})
})
