package controllertest

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// TestNetwork is the Docker network the test options name.
const TestNetwork = "sbx-test"

// TestOptions are the manager defaults with deadlines short enough for tests.
func TestOptions() Options {
	o := controllers.DefaultOptions()
	o.DefaultNetwork = TestNetwork
	o.StopTimeout = time.Second
	o.ProbeDeadlines = map[string]time.Duration{"postgres": 3 * time.Second, "redis": 3 * time.Second, "mongo": 3 * time.Second}
	return o
}

// UpstreamImages are the engines' default images, with the VOLUMEs the real ones declare.
var UpstreamImages = map[string]fake.Image{
	"postgres:16-alpine":              {Volumes: []string{"/var/lib/postgresql/data"}},
	"roboco-sandbox-pg:latest":        {Volumes: []string{"/var/lib/postgresql/data"}},
	"redis:8-alpine":                  {Volumes: []string{"/data"}},
	"redis/redis-stack-server:latest": {Volumes: []string{"/data"}},
	"mongo:8":                         {Volumes: []string{"/data/db", "/data/configdb"}},
}

// NewHost is a fake Docker host whose registry serves the engines' images (so every
// first use pulls) and which has the test network.
func NewHost(opts ...fake.Option) *EngineSim {
	sim := NewEngineSim(opts...)
	sim.AddNetwork(TestNetwork)
	for ref, img := range UpstreamImages {
		sim.AddRegistryImage(ref, img)
	}
	return sim
}

// NewNamespace makes a namespace for one spec. When the spec ends, its Sandboxes
// and SandboxPools are deleted with their finalizers stripped, so no later manager (on another fake host)
// sees them.
func NewNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sbx-"}}
	gomega.Expect(k8sClient.Create(ctx, ns)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func() {
		var list sandboxv1.SandboxList
		gomega.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns.Name))).To(gomega.Succeed())
		for i := range list.Items {
			sb := &list.Items[i]
			_ = k8sClient.Delete(ctx, sb)
			patch := client.MergeFrom(sb.DeepCopy())
			sb.Finalizers = nil
			_ = client.IgnoreNotFound(k8sClient.Patch(ctx, sb, patch))
		}
		var pools sandboxv1.SandboxPoolList
		gomega.Expect(k8sClient.List(ctx, &pools, client.InNamespace(ns.Name))).To(gomega.Succeed())
		for i := range pools.Items {
			p := &pools.Items[i]
			_ = k8sClient.Delete(ctx, p)
			patch := client.MergeFrom(p.DeepCopy())
			p.Finalizers = nil
			_ = client.IgnoreNotFound(k8sClient.Patch(ctx, p, patch))
		}
		gomega.Eventually(func() int {
			gomega.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns.Name))).To(gomega.Succeed())
			gomega.Expect(k8sClient.List(ctx, &pools, client.InNamespace(ns.Name))).To(gomega.Succeed())
			return len(list.Items) + len(pools.Items)
		}).Should(gomega.BeZero())
	})
	return ns.Name
}

// SuiteInstance is the instance a manager of the suite's cluster derives when its
// options name none.
func SuiteInstance() string {
	instance, err := controllers.ClusterInstance(ctx, k8sClient)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return instance
}

// NewSandbox is a Sandbox of engines with no owner to follow.
func NewSandbox(ns, name, agentID string, engines ...string) *sandboxv1.Sandbox {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sandboxv1.SandboxSpec{AgentID: agentID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone}}}
	for _, e := range engines {
		sb.Spec.Services = append(sb.Spec.Services, sandboxv1.ServiceSpec{Engine: sandboxv1.Engine(e)})
	}
	return sb
}

// Get reads a Sandbox from the API server.
func Get(sb *sandboxv1.Sandbox) *sandboxv1.Sandbox {
	out := &sandboxv1.Sandbox{}
	gomega.ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), out)).To(gomega.Succeed())
	return out
}

// Condition returns "Status/Reason" of a condition, "" when absent, for readable matchers.
func Condition(sb *sandboxv1.Sandbox, t string) func() string {
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

// ConditionMessage returns a condition's message, "" when absent.
func ConditionMessage(sb *sandboxv1.Sandbox, t string) func() string {
	return func() string {
		if c := meta.FindStatusCondition(Get(sb).Status.Conditions, t); c != nil {
			return c.Message
		}
		return ""
	}
}

// ConditionOf is a Sandbox's condition of type t, which must be there.
func ConditionOf(sb *sandboxv1.Sandbox, t string) metav1.Condition {
	c := meta.FindStatusCondition(Get(sb).Status.Conditions, t)
	gomega.ExpectWithOffset(1, c).NotTo(gomega.BeNil(), "no %s condition", t)
	return *c
}

// WaitReady waits for a Sandbox to be Ready and returns it.
func WaitReady(sb *sandboxv1.Sandbox) *sandboxv1.Sandbox {
	gomega.EventuallyWithOffset(1, Condition(sb, sandboxv1.ConditionReady)).Should(gomega.Equal("True/Ready"))
	return Get(sb)
}

// SecretOf is the data of a Sandbox's credentials Secret.
func SecretOf(sb *sandboxv1.Sandbox) map[string]string {
	s := &corev1.Secret{}
	gomega.ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: sb.Name + "-sandbox"}, s)).To(gomega.Succeed())
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// ContainersOf lists the containers a Sandbox's UID label claims, in any state.
func ContainersOf(host *EngineSim, sb *sandboxv1.Sandbox) []dd.ContainerSummary {
	cs, err := host.List(ctx, map[string]string{shost.LabelUID: string(Get(sb).UID)})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return cs
}

// ContainersByUID lists the containers labelled with uid, in any state.
func ContainersByUID(host *EngineSim, uid string) func() []dd.ContainerSummary {
	return func() []dd.ContainerSummary {
		cs, err := host.List(ctx, map[string]string{shost.LabelUID: uid})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		return cs
	}
}

// Gone says whether a Sandbox is gone from the API server.
func Gone(sb *sandboxv1.Sandbox) func() bool {
	return func() bool {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), &sandboxv1.Sandbox{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}
}

// EventReasons lists the reasons of the events about a Sandbox (or a pool).
func EventReasons(obj client.Object) func() []string {
	return EventsAbout(obj, func(e eventsv1.Event) string { return e.Reason })
}

// EventsAbout lists what pick reads of each event about obj.
func EventsAbout(obj client.Object, pick func(eventsv1.Event) string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		gomega.Expect(k8sClient.List(ctx, &list, client.InNamespace(obj.GetNamespace()))).To(gomega.Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == obj.GetName() {
				out = append(out, pick(e))
			}
		}
		return out
	}
}

// KeyOf is the key of namespace/name.
func KeyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// ErrString is an error of a daemon's words.
type ErrString string

func (e ErrString) Error() string { return string(e) }

// Engines lists the engines of a Sandbox's status.services.
func Engines(sb *sandboxv1.Sandbox) []string {
	var out []string
	for _, s := range sb.Status.Services {
		out = append(out, string(s.Engine))
	}
	return out
}

// Edit changes a Sandbox's spec, retrying on conflicts (the manager writes its
// status meanwhile).
func Edit(sb *sandboxv1.Sandbox, change func(*sandboxv1.SandboxSpec)) {
	gomega.EventuallyWithOffset(1, func() error {
		cur := Get(sb)
		change(&cur.Spec)
		return k8sClient.Update(ctx, cur)
	}).Should(gomega.Succeed())
}

func Seeded(sb *sandboxv1.Sandbox, configMap string) *sandboxv1.Sandbox {
	for i := range sb.Spec.Services {
		sb.Spec.Services[i].Init = &sandboxv1.ServiceInit{ConfigMapRef: &sandboxv1.LocalRef{Name: configMap}}
	}
	return sb
}

// EventMessages lists the notes of the events about obj.
func EventMessages(obj client.Object) func() []string {
	return EventsAbout(obj, func(e eventsv1.Event) string { return e.Note })
}

// DeletedGoes deletes sb and expects it gone with its Secret, within a deadline
// that no wait of it may stretch.
func DeletedGoes(sb *sandboxv1.Sandbox) {
	gomega.ExpectWithOffset(1, k8sClient.Delete(ctx, sb)).To(gomega.Succeed())
	gomega.EventuallyWithOffset(1, Gone(sb), 30*time.Second).Should(gomega.BeTrue(), "a deleted Sandbox that waits was kept")
	gomega.EventuallyWithOffset(1, func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, KeyOf(sb.Namespace, sb.Name+"-sandbox"), &corev1.Secret{}))
	}).Should(gomega.BeTrue(), "its Secret outlived it")
}
