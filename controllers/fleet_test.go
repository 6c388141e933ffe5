package controllers_test

import (
	"context"
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
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// fleetOf runs a manager whose own Docker host (DockerHost local) is local and
// which dials the fake behind each other DockerHost by its endpoint
// (unix:///fake/<name>), until the returned stop is called (or the spec ends).
func fleetOf(local *engineSim, others map[string]*engineSim) (stop func()) {
	dial := func(_ context.Context, h *sandboxv1.DockerHost) (dd.Driver, error) {
		for name, sim := range others {
			if h.Spec.Endpoint == "unix:///fake/"+name {
				return sim, nil
			}
		}
		return nil, fmt.Errorf("no fake at %s", h.Spec.Endpoint)
	}
	return startManagerWith(env.Config, local, controllers.Setup{Options: testOptions(), Sweep: true,
		HostIdentitySettle: time.Millisecond, Dial: dial})
}

// registerHost applies a DockerHost for the fake name, removed when the spec ends
// (its in-use finalizer stripped, so no later spec sees it).
func registerHost(name string, labels map[string]string, capacity *int32) *sandboxv1.DockerHost {
	h := &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: sandboxv1.DockerHostSpec{Endpoint: "unix:///fake/" + name}}
	if capacity != nil {
		h.Spec.Capacity = &sandboxv1.DockerHostCapacity{Sandboxes: capacity}
	}
	Expect(k8sClient.Create(ctx, h)).To(Succeed())
	DeferCleanup(func() {
		_ = k8sClient.Delete(ctx, h)
		Eventually(func() error {
			cur := &sandboxv1.DockerHost{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(h), cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Finalizers = nil
			_ = k8sClient.Patch(ctx, cur, patch)
			return fmt.Errorf("DockerHost %s still exists", name)
		}).Should(Succeed())
	})
	return h
}

// poke changes an annotation, which makes the Sandbox's host look at it again.
func poke(sb *sandboxv1.Sandbox) {
	cur := get(sb)
	patch := client.MergeFrom(cur.DeepCopy())
	metav1.SetMetaDataAnnotation(&cur.ObjectMeta, "test.sandbox.roboco.io/poke", time.Now().String())
	ExpectWithOffset(1, k8sClient.Patch(ctx, cur, patch)).To(Succeed())
}

func hostOf(sb *sandboxv1.Sandbox) func() string {
	return func() string { return get(sb).Spec.DockerHost }
}

func dockerHost(name string) *sandboxv1.DockerHost {
	h := &sandboxv1.DockerHost{}
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Name: name}, h)).To(Succeed())
	return h
}

var _ = Describe("A fleet of Docker hosts", func() {
	var ns string
	var local, b, c *engineSim
	BeforeEach(func() {
		ns = newNamespace()
		local, b, c = newHost(), newHost(), newHost()
	})

	It("places a Sandbox beside its owner container, on the host that runs it, and serves it there", func() {
		registerHost("fleet-b", nil, nil)
		registerHost("fleet-c", nil, nil)
		seedOwner(b, "roboco-agent-beside-1")
		fleetOf(local, map[string]*engineSim{"fleet-b": b, "fleet-c": c})

		sb := ownedSandbox(ns, "beside", "beside-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(hostOf(sb)).Should(Equal("fleet-b"))
		waitReady(sb)
		Expect(containersOf(b, sb)).To(HaveLen(1))
		Expect(containersOf(local, sb)).To(BeEmpty())
		Expect(containersOf(c, sb)).To(BeEmpty())
		Expect(get(sb).Status.DockerHost.ID).To(Equal(dockerHost("fleet-b").Status.Identity.ID))
	})

	It("does not guess when the owner runs on two hosts: Unschedulable until the user names one", func() {
		registerHost("fleet-b", nil, nil)
		registerHost("fleet-c", nil, nil)
		seedOwner(b, "roboco-agent-twice-1")
		seedOwner(c, "roboco-agent-twice-1")
		fleetOf(local, map[string]*engineSim{"fleet-b": b, "fleet-c": c})

		sb := ownedSandbox(ns, "twice", "twice-1", 0, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() string {
			if c := meta.FindStatusCondition(get(sb).Status.Conditions, sandboxv1.ConditionReady); c != nil {
				return c.Message
			}
			return ""
		}).
			Should(ContainSubstring("runs on Docker hosts fleet-b and fleet-c"))
		Expect(condition(sb, sandboxv1.ConditionReady)()).To(Equal("False/Unschedulable"))
		Consistently(hostOf(sb), "500ms").Should(BeEmpty())

		cur := get(sb)
		cur.Spec.DockerHost = "fleet-c"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		waitReady(sb)
		Expect(containersOf(c, sb)).To(HaveLen(1))
	})

	It("places by selector, least loaded first, and never past a host's capacity", func() {
		registerHost("fleet-b", map[string]string{"zone": "z1"}, ptr.To[int32](2))
		registerHost("fleet-c", map[string]string{"zone": "z1"}, ptr.To[int32](2))
		fleetOf(local, map[string]*engineSim{"fleet-b": b, "fleet-c": c})

		var sbs []*sandboxv1.Sandbox
		for i := range 6 {
			sb := newSandbox(ns, fmt.Sprintf("z-%d", i), fmt.Sprintf("z-%d", i), "redis")
			sb.Spec.DockerHostSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "z1"}}
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			sbs = append(sbs, sb)
		}
		placed := func() map[string]int {
			out := map[string]int{}
			for _, sb := range sbs {
				out[get(sb).Spec.DockerHost]++
			}
			return out
		}
		Eventually(placed).Should(Equal(map[string]int{"fleet-b": 2, "fleet-c": 2, "": 2}))
		Consistently(placed, "1s").Should(Equal(map[string]int{"fleet-b": 2, "fleet-c": 2, "": 2}))
		for _, sb := range sbs {
			if get(sb).Spec.DockerHost == "" {
				Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
				Expect(conditionOf(get(sb), sandboxv1.ConditionReady).Message).To(ContainSubstring("2 has no capacity left"))
			}
		}

		h := dockerHost("fleet-c")
		h.Spec.Capacity.Sandboxes = ptr.To[int32](4)
		Expect(k8sClient.Update(ctx, h)).To(Succeed())
		Eventually(placed).Should(Equal(map[string]int{"fleet-b": 2, "fleet-c": 4}))
		for _, sb := range sbs {
			waitReady(sb)
		}
		Eventually(func() int32 { return dockerHost("fleet-c").Status.Allocated.Sandboxes }).Should(Equal(int32(4)))
	})

	It("reports a host that stops answering on its Sandboxes, deletes nothing, and converges when it returns", func() {
		registerHost("fleet-b", nil, nil)
		fleetOf(local, map[string]*engineSim{"fleet-b": b})
		sb := newSandbox(ns, "down", "down-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID

		clear := b.Inject(fake.Fault{Err: dd.ErrUnavailable})
		poke(sb) // rather than wait for the resync

		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerUnavailable"))
		Eventually(func() bool {
			return meta.IsStatusConditionFalse(dockerHost("fleet-b").Status.Conditions, sandboxv1.ConditionReady)
		}, 45*time.Second).Should(BeTrue())
		Expect(b.Calls(fake.VerbRemove)).To(BeZero())
		clear()
		Eventually(condition(sb, sandboxv1.ConditionReady), 45*time.Second).Should(Equal("True/Ready"))
		Expect(get(sb).Status.Services[0].ContainerID).To(Equal(id))
	})

	It("stops serving a host whose endpoint now reaches another daemon, changes nothing there, and resumes with the same containers when pointed back", func() {
		registerHost("fleet-b", nil, nil)
		registerHost("fleet-c", nil, nil)
		fleetOf(local, map[string]*engineSim{"fleet-b": b, "fleet-c": c})
		sb := newSandbox(ns, "moved", "moved-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID
		identityOf := func(name string) func() string {
			return func() string {
				if i := dockerHost(name).Status.Identity; i != nil {
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
			h := dockerHost("fleet-b")
			patch := client.MergeFrom(h.DeepCopy())
			h.Spec.Endpoint = endpoint
			Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		}
		setEndpoint("unix:///fake/fleet-c")
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/WrongDockerHost"))
		Expect(conditionOf(sb, sandboxv1.ConditionReady).Message).To(And(ContainSubstring(bID), ContainSubstring(cID)))
		Eventually(identityOf("fleet-b")).Should(Equal(cID))
		poke(sb) // any further pass must not act on the other daemon either
		Consistently(func() int { return c.Calls(fake.VerbCreateContainer) - creates + c.Calls(fake.VerbRemove) - removes },
			2*time.Second).Should(BeZero())
		Expect(containersOf(c, sb)).To(BeEmpty())
		Expect(containersOf(b, sb)).To(HaveLen(1))

		By("pointing it back: the same container serves again")
		setEndpoint("unix:///fake/fleet-b")
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))
		Expect(get(sb).Status.Services[0].ContainerID).To(Equal(id))
		Eventually(identityOf("fleet-b")).Should(Equal(bID))
	})

	It("acts on nothing for a deleted DockerHost: a Sandbox pinned to its name is told so, and served once it is registered again", func() {
		registerHost("fleet-b", nil, nil)
		fleetOf(local, map[string]*engineSim{"fleet-b": b})
		first := newSandbox(ns, "before", "before-1", "redis")
		first.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		waitReady(first)
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(gone(first)).Should(BeTrue())
		Expect(k8sClient.Delete(ctx, dockerHost("fleet-b"))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: "fleet-b"}, &sandboxv1.DockerHost{}))
		}).Should(BeTrue())
		creates := b.Calls(fake.VerbCreateContainer)

		sb := newSandbox(ns, "pinned", "pinned-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerHostNotFound"))
		Expect(conditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("register that DockerHost again"))
		Consistently(func() int { return b.Calls(fake.VerbCreateContainer) - creates }, 2*time.Second).Should(BeZero(),
			"a container was made for a DockerHost that no longer exists")

		By("registering it again")
		registerHost("fleet-b", nil, nil)
		waitReady(sb)
		Expect(containersOf(b, sb)).To(HaveLen(1))
	})

	It("keeps a deleted host, and serves its Sandboxes, until they are gone; a cordoned host takes nothing new", func() {
		h := registerHost("fleet-b", map[string]string{"zone": "zb"}, nil)
		fleetOf(local, map[string]*engineSim{"fleet-b": b})
		sb := newSandbox(ns, "kept", "kept-1", "redis")
		sb.Spec.DockerHost = "fleet-b"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)

		cordoned := dockerHost("fleet-b")
		cordoned.Spec.Unschedulable = true
		Expect(k8sClient.Update(ctx, cordoned)).To(Succeed())
		Eventually(func() string {
			return string(meta.FindStatusCondition(dockerHost("fleet-b").Status.Conditions, sandboxv1.ConditionSchedulable).Reason)
		}).Should(Equal(sandboxv1.ReasonCordoned))
		other := newSandbox(ns, "elsewhere", "elsewhere-1", "redis")
		other.Spec.DockerHostSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "zb"}}
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(condition(other, sandboxv1.ConditionReady)).Should(Equal("False/Unschedulable"))
		Expect(conditionOf(get(other), sandboxv1.ConditionReady).Message).To(ContainSubstring("1 is cordoned"))

		Expect(k8sClient.Delete(ctx, h)).To(Succeed())
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(h), &sandboxv1.DockerHost{}) }, "1s").Should(Succeed())
		Expect(get(sb).Status.Conditions).To(ContainElement(HaveField("Reason", sandboxv1.ReasonReady)))
		uid := string(get(sb).UID)
		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(gone(sb)).Should(BeTrue())
		Expect(containersByUID(b, uid)()).To(BeEmpty())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), &sandboxv1.DockerHost{}))
		}, 45*time.Second).Should(BeTrue(), "the host outlived its last Sandbox")
	})
})
