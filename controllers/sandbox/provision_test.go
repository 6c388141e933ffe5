package sandbox_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

var _ = Describe("Provisioning", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		ct.StartManager(host, ct.TestOptions())
	})

	DescribeTable("makes each engine and the trio Ready with working credentials",
		func(engines []string, wantKeys []string) {
			sb := ct.NewSandbox(ns, "happy", "agent-"+strings.Join(engines, "-"), engines...)
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			got := ct.WaitReady(sb)

			By("publishing exactly the engines' variables in the Secret named in status")
			Expect(got.Status.SecretName).To(Equal("happy-sandbox"))
			secret := ct.SecretOf(sb)
			keys := []string{}
			for k := range secret {
				keys = append(keys, k)
			}
			Expect(keys).To(ConsistOf(wantKeys))
			for _, k := range wantKeys {
				Expect(secret[k]).NotTo(BeEmpty(), k)
			}

			By("reporting every service in status, never a password")
			Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			Expect(got.Status.Engines).To(Equal(strings.Join(engines, ",")))
			Expect(got.Status.Services).To(HaveLen(len(engines)))
			for _, s := range got.Status.Services {
				Expect(s.Ready).To(BeTrue())
				Expect(s.ContainerName).To(HavePrefix("roboco-sandbox-"))
				Expect(s.ContainerName).To(HaveSuffix(sb.Spec.AgentID))
				Expect(s.Host).To(Equal(s.ContainerName))
				Expect(s.ContainerID).NotTo(BeEmpty())
				Expect(s.Port).To(BeNumerically(">", 0))
				Expect(s.Restarts).To(BeZero())
			}
			status := strings.Join(strings.Fields(strings.ReplaceAll(ct.ToJSON(got.Status), ",", " ")), " ")
			for k, v := range secret {
				if strings.HasSuffix(k, "_PASSWORD") {
					Expect(status).NotTo(ContainSubstring(v))
				}
			}

			By("stamping every condition with the generation, Ready summarising them")
			for _, t := range []string{sandboxv1.ConditionImagesReady, sandboxv1.ConditionContainersRunning,
				sandboxv1.ConditionServicesReady, sandboxv1.ConditionReady} {
				c := meta.FindStatusCondition(got.Status.Conditions, t)
				Expect(c).NotTo(BeNil(), t)
				Expect(string(c.Status)).To(Equal("True"), t)
				Expect(c.ObservedGeneration).To(Equal(got.Generation), t)
			}
			Expect(meta.FindStatusCondition(got.Status.Conditions, sandboxv1.ConditionStalled)).To(BeNil())
			Expect(meta.FindStatusCondition(got.Status.Conditions, sandboxv1.ConditionReconciling)).To(BeNil())

			By("running each container as upstream does, labelled with our UID")
			cs := ct.ContainersOf(host, sb)
			Expect(cs).To(HaveLen(len(engines)))
			for _, summary := range cs {
				c, ok := host.Peek(summary.ID)
				Expect(ok).To(BeTrue())
				Expect(c.State).To(Equal(dd.StateRunning))
				Expect(c.Labels).To(HaveKeyWithValue(shost.LabelSandbox, "1"))
				Expect(c.Labels).To(HaveKeyWithValue(shost.LabelOwner, "roboco-agent-"+sb.Spec.AgentID))
				Expect(c.Labels).To(HaveKeyWithValue(shost.LabelNamespace, ns))
				Expect(c.Labels).To(HaveKeyWithValue(shost.LabelName, "happy"))
				Expect(c.MemoryBytes).To(Equal(int64(512 << 20)))
				Expect(c.NanoCPUs).To(Equal(int64(1e9)))
				Expect(c.PidsLimit).To(BeNumerically(">", 0))
				Expect(c.Networks).To(HaveKey(ct.TestNetwork))
				Expect(c.Networks[ct.TestNetwork].Aliases).To(ContainElement(c.Name))
			}
			Expect(host.Volumes()).To(BeEmpty(), "tmpfs covers every VOLUME: no anonymous volume")
			Eventually(ct.EventReasons(sb)).Should(ContainElement("Provisioned"))
		},
		Entry("postgres", []string{"postgres"}, []string{"ROBOCO_TEST_DB_HOST", "ROBOCO_TEST_DB_PORT",
			"ROBOCO_TEST_DB_USER", "ROBOCO_TEST_DB_PASSWORD", "ROBOCO_TEST_DB_ADMIN_DB", "ROBOCO_TEST_DB_URL"}),
		Entry("redis", []string{"redis"}, []string{"ROBOCO_TEST_REDIS_HOST", "ROBOCO_TEST_REDIS_PORT", "ROBOCO_TEST_REDIS_PASSWORD",
			"ROBOCO_TEST_REDIS_URL"}),
		Entry("mongo", []string{"mongo"}, []string{"ROBOCO_TEST_MONGO_HOST", "ROBOCO_TEST_MONGO_PORT",
			"ROBOCO_TEST_MONGO_USER", "ROBOCO_TEST_MONGO_PASSWORD", "ROBOCO_TEST_MONGO_AUTH_DB", "ROBOCO_TEST_MONGO_URL"}),
		Entry("the trio", []string{"postgres", "redis", "mongo"}, []string{"ROBOCO_TEST_DB_HOST", "ROBOCO_TEST_DB_PORT",
			"ROBOCO_TEST_DB_USER", "ROBOCO_TEST_DB_PASSWORD", "ROBOCO_TEST_DB_ADMIN_DB", "ROBOCO_TEST_DB_URL",
			"ROBOCO_TEST_REDIS_HOST", "ROBOCO_TEST_REDIS_PORT", "ROBOCO_TEST_REDIS_PASSWORD", "ROBOCO_TEST_REDIS_URL", "ROBOCO_TEST_MONGO_URL",
			"ROBOCO_TEST_MONGO_HOST", "ROBOCO_TEST_MONGO_PORT", "ROBOCO_TEST_MONGO_USER",
			"ROBOCO_TEST_MONGO_PASSWORD", "ROBOCO_TEST_MONGO_AUTH_DB"}),
	)

	It("publishes a host that resolvers accept for the longest agentID", func() {
		agentID := strings.Repeat("a", 54) + "-agent-01" // 63 characters, the API's limit
		sb := ct.NewSandbox(ns, "long", agentID, "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		secret := ct.SecretOf(sb)
		hostKeys := map[sandboxv1.Engine]string{"postgres": "ROBOCO_TEST_DB_HOST", "redis": "ROBOCO_TEST_REDIS_HOST", "mongo": "ROBOCO_TEST_MONGO_HOST"}
		for _, s := range got.Status.Services {
			Expect(len(s.ContainerName)).To(BeNumerically(">", 63), "the container keeps upstream's name")
			Expect(len(s.Host)).To(BeNumerically("<=", 63), "%s: a DNS label", s.Engine)
			Expect(s.Host).To(HavePrefix("roboco-sandbox-"))
			Expect(secret[hostKeys[s.Engine]]).To(Equal(s.Host), "the Secret publishes the status' host")
			c, ok := host.Peek(s.ContainerID)
			Expect(ok).To(BeTrue())
			Expect(c.Networks[ct.TestNetwork].Aliases).To(ContainElements(s.ContainerName, s.Host))
		}
	})

	It("activates and verifies features on the kitchen-sink images", func() {
		sb := ct.NewSandbox(ns, "features", "feat-1")
		sb.Spec.Services = []sandboxv1.ServiceSpec{
			{Engine: "postgres", Features: []sandboxv1.Feature{"vector", "uuid-ossp"}},
			{Engine: "redis", Features: []sandboxv1.Feature{"json", "bloom"}},
		}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].Image).To(Equal("roboco-sandbox-pg:latest"))
		Expect(got.Status.Services[0].Features).To(ConsistOf(sandboxv1.Feature("vector"), sandboxv1.Feature("uuid-ossp")))
		Expect(got.Status.Services[1].Image).To(Equal("redis/redis-stack-server:latest"))
		Expect(got.Status.Services[1].Features).To(ConsistOf(sandboxv1.Feature("json"), sandboxv1.Feature("bloom")))
	})

	It("shares one pull between Sandboxes that need the same image", func() {
		release := host.HoldPull("postgres:16-alpine")
		a := ct.NewSandbox(ns, "a", "share-a", "postgres")
		b := ct.NewSandbox(ns, "b", "share-b", "postgres")
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Eventually(ct.Condition(a, sandboxv1.ConditionImagesReady)).Should(Equal("False/Pulling"))
		Eventually(ct.Condition(b, sandboxv1.ConditionImagesReady)).Should(Equal("False/Pulling"))
		Expect(ct.ConditionOf(a, sandboxv1.ConditionImagesReady).Message).To(ContainSubstring("pulling postgres:16-alpine for"))
		Expect(ct.ConditionOf(a, sandboxv1.ConditionReady).Reason).To(Equal(sandboxv1.ReasonProvisioning))
		Expect(ct.ConditionOf(a, sandboxv1.ConditionReconciling).Status).To(BeEquivalentTo("True"))
		release()
		ct.WaitReady(a)
		ct.WaitReady(b)
		Expect(host.RegistryPulls("postgres:16-alpine")).To(Equal(1))
	})

	It("provisions the services of a trio in parallel: creates and probes overlap", func() {
		// Each create and each exec takes a while, so overlapping calls are seen.
		// Note: the creates outlast the pass's inline wait (host.InlineCreateWait),
		// all three: one ending within it would be probed a pass before the others.
		host.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Delay: time.Second})
		host.Inject(fake.Fault{Verb: fake.VerbExec, Delay: 300 * time.Millisecond})
		sb := ct.NewSandbox(ns, "parallel", "parallel-1", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Expect(host.PeakConcurrency("create")).To(Equal(3))
		Expect(host.PeakConcurrency("exec")).To(Equal(3))
	})

	It("costs no Docker call while a Ready Sandbox does not change", func() {
		sb := ct.NewSandbox(ns, "steady", "steady-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		// Events of the provisioning itself may still re-queue it once: wait for a
		// quiet second, then count.
		Eventually(func() int {
			host.ResetCalls()
			time.Sleep(time.Second)
			return host.TotalCalls()
		}).Should(BeZero())
		Consistently(func() map[fake.Verb]int {
			calls := map[fake.Verb]int{}
			for _, v := range []fake.Verb{fake.VerbList, fake.VerbInspect, fake.VerbExec, fake.VerbImagePresent, fake.VerbCreateContainer, fake.VerbPullImage} {
				if n := host.Calls(v); n > 0 {
					calls[v] = n
				}
			}
			return calls
		}, "3s", "100ms").Should(BeEmpty())
	})

})

var _ = Describe("Operator options", func() {
	It("run the operator's images and resource defaults, never the author's", func() {
		opts := ct.TestOptions()
		opts.Images = map[string]engine.Images{"redis": {Default: "localhost:5001/sandbox-test/redis:7"}}
		opts.DefaultMemory = resource.MustParse("128Mi")
		host := ct.NewHost()
		host.AddRegistryImage("localhost:5001/sandbox-test/redis:7", fake.Image{})
		ct.StartManager(host, opts)
		sb := ct.NewSandbox(ct.NewNamespace(), "override", "override-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].Image).To(Equal("localhost:5001/sandbox-test/redis:7"))
		c, _ := host.Peek(got.Status.Services[0].ContainerID)
		Expect(c.Image).To(Equal("localhost:5001/sandbox-test/redis:7"))
		Expect(c.MemoryBytes).To(Equal(int64(128 << 20)))
	})
})
