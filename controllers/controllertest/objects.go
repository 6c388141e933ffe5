package controllers_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

const testNetwork = "sbx-test"

// testOptions are the manager defaults with deadlines short enough for tests.
func testOptions() controllers.Options {
	o := controllers.DefaultOptions()
	o.DefaultNetwork = testNetwork
	o.StopTimeout = time.Second
	o.ProbeDeadlines = map[string]time.Duration{"postgres": 3 * time.Second, "redis": 3 * time.Second, "mongo": 3 * time.Second}
	return o
}

// upstreamImages are the engines' default images, with the VOLUMEs the real ones declare.
var upstreamImages = map[string]fake.Image{
	"postgres:16-alpine":              {Volumes: []string{"/var/lib/postgresql/data"}},
	"roboco-sandbox-pg:latest":        {Volumes: []string{"/var/lib/postgresql/data"}},
	"redis:8-alpine":                  {Volumes: []string{"/data"}},
	"redis/redis-stack-server:latest": {Volumes: []string{"/data"}},
	"mongo:8":                         {Volumes: []string{"/data/db", "/data/configdb"}},
}

// newHost is a fake Docker host whose registry serves the engines' images (so every
// first use pulls) and which has the test network.
func newHost(opts ...fake.Option) *engineSim {
	sim := newEngineSim(opts...)
	sim.AddNetwork(testNetwork)
	for ref, img := range upstreamImages {
		sim.AddRegistryImage(ref, img)
	}
	return sim
}

// newNamespace makes a namespace for one spec. When the spec ends, its Sandboxes
// and SandboxPools are deleted with their finalizers stripped, so no later manager (on another fake host)
// sees them.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbx-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() {
		var list sandboxv1.SandboxList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(ns.Name))).To(Succeed())
		for i := range list.Items {
			sb := &list.Items[i]
			_ = k8sClient.Delete(ctx, sb)
			patch := client.MergeFrom(sb.DeepCopy())
			sb.Finalizers = nil
			_ = client.IgnoreNotFound(k8sClient.Patch(ctx, sb, patch))
		}
		var pools sandboxv1.SandboxPoolList
		Expect(k8sClient.List(ctx, &pools, client.InNamespace(ns.Name))).To(Succeed())
		for i := range pools.Items {
			p := &pools.Items[i]
			_ = k8sClient.Delete(ctx, p)
			patch := client.MergeFrom(p.DeepCopy())
			p.Finalizers = nil
			_ = client.IgnoreNotFound(k8sClient.Patch(ctx, p, patch))
		}
		Eventually(func() int {
			Expect(k8sClient.List(ctx, &list, client.InNamespace(ns.Name))).To(Succeed())
			Expect(k8sClient.List(ctx, &pools, client.InNamespace(ns.Name))).To(Succeed())
			return len(list.Items) + len(pools.Items)
		}).Should(BeZero())
	})
	return ns.Name
}

// suiteInstance is the instance a manager of the suite's cluster derives when its
// options name none.
func suiteInstance() string {
	instance, err := controllers.ClusterInstance(ctx, k8sClient)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return instance
}

func newSandbox(ns, name, agentID string, engines ...string) *sandboxv1.Sandbox {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sandboxv1.SandboxSpec{AgentID: agentID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone}}}
	for _, e := range engines {
		sb.Spec.Services = append(sb.Spec.Services, sandboxv1.ServiceSpec{Engine: sandboxv1.Engine(e)})
	}
	return sb
}

func get(sb *sandboxv1.Sandbox) *sandboxv1.Sandbox {
	out := &sandboxv1.Sandbox{}
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), out)).To(Succeed())
	return out
}

// condition returns "Status/Reason" of a condition, "" when absent, for readable matchers.
func condition(sb *sandboxv1.Sandbox, t string) func() string {
	return func() string {
		got := &sandboxv1.Sandbox{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), got); err != nil {
			return "get: " + err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, t)
		if c == nil {
			return ""
		}
		return fmt.Sprintf("%s/%s", c.Status, c.Reason)
	}
}

func conditionOf(sb *sandboxv1.Sandbox, t string) metav1.Condition {
	c := meta.FindStatusCondition(get(sb).Status.Conditions, t)
	ExpectWithOffset(1, c).NotTo(BeNil(), "no %s condition", t)
	return *c
}

func waitReady(sb *sandboxv1.Sandbox) *sandboxv1.Sandbox {
	EventuallyWithOffset(1, condition(sb, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))
	return get(sb)
}

func secretOf(sb *sandboxv1.Sandbox) map[string]string {
	s := &corev1.Secret{}
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Name + "-sandbox"}, s)).To(Succeed())
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// containersOf lists the containers a Sandbox's UID label claims, in any state.
func containersOf(host *engineSim, sb *sandboxv1.Sandbox) []dd.ContainerSummary {
	cs, err := host.List(ctx, map[string]string{shost.LabelUID: string(get(sb).UID)})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cs
}

func containersByUID(host *engineSim, uid string) func() []dd.ContainerSummary {
	return func() []dd.ContainerSummary {
		cs, err := host.List(ctx, map[string]string{shost.LabelUID: uid})
		Expect(err).NotTo(HaveOccurred())
		return cs
	}
}

func gone(sb *sandboxv1.Sandbox) func() bool {
	return func() bool {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), &sandboxv1.Sandbox{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}
}

// eventReasons lists the reasons of the events about a Sandbox (or a pool).
func eventReasons(obj client.Object) func() []string {
	return eventsAbout(obj, func(e eventsv1.Event) string { return e.Reason })
}

// eventsAbout lists what pick reads of each event about obj.
func eventsAbout(obj client.Object, pick func(eventsv1.Event) string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == obj.GetName() {
				out = append(out, pick(e))
			}
		}
		return out
	}
}

type corev1Secret = corev1.Secret

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
