package sandbox_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// The operator offers postgres 16 (its default images) and 17.
const pg17 = "postgres:17-alpine"

func versionedOptions() ct.Options {
	o := ct.TestOptions()
	o.DefaultVersions = map[string]string{"postgres": "16"}
	o.Versions = map[string]map[string]engine.Images{"postgres": {"17": {Default: pg17}}}
	return o
}

func withVersion(sb *sandboxv1.Sandbox, v string) *sandboxv1.Sandbox {
	sb.Spec.Services[0].Version = v
	return sb
}

var _ = Describe("Engine versions (spec.services[].version)", func() {
	var (
		sim *ct.EngineSim
		ns  string
	)
	BeforeEach(func() {
		sim = ct.NewHost()
		sim.AddRegistryImage(pg17, fake.Image{Volumes: []string{"/var/lib/postgresql/data"}})
		ns = ct.NewNamespace()
		stop := ct.StartManager(sim, versionedOptions())
		DeferCleanup(func() { stop() })
	})

	It("runs the version's image, says which version runs, and replaces the container when the version changes", func() {
		sb := withVersion(ct.NewSandbox(ns, "v17", "version-17", "postgres"), "17")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		st := ct.Get(sb).Status.Services[0]
		Expect(st.Image).To(Equal(pg17))
		Expect(st.Version).To(Equal("17"))
		first := st.ContainerID

		By("going back to the default")
		Eventually(func() error {
			cur := ct.Get(sb)
			cur.Spec.Services[0].Version = ""
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() string { return ct.Get(sb).Status.Services[0].Image }).Should(Equal("postgres:16-alpine"))
		ct.WaitReady(sb)
		st = ct.Get(sb).Status.Services[0]
		Expect(st.Version).To(Equal("16"), "the default's name")
		Expect(st.ContainerID).NotTo(Equal(first))

		By("naming the default: the same container")
		Eventually(func() error {
			cur := ct.Get(sb)
			cur.Spec.Services[0].Version = "16"
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() int64 { return ct.Get(sb).Status.ObservedGeneration }).Should(Equal(ct.Get(sb).Generation))
		Consistently(func() string { return ct.Get(sb).Status.Services[0].ContainerID }, "2s").Should(Equal(st.ContainerID))
	})

	It("stalls a version not offered, naming the offered ones, and makes nothing", func() {
		sb := withVersion(ct.NewSandbox(ns, "v99", "version-99", "postgres"), "99")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(
			Equal(`postgres version "99" is not offered; offered: 16 (default, or leave version empty), 17`))
		Expect(ct.ContainersOf(sim, sb)).To(BeEmpty())
	})

	It("never serves a Sandbox of one version from a pool of another", func() {
		pool := ct.NewPool(ns, "pg17", "postgres", 1)
		pool.Spec.Service.Version = "17"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{1, 1, 0}), ct.PoolDescribe(pool))
		sb := ct.NewSandbox(ns, "default", "version-default", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Expect(ct.Get(sb).Status.Claims).To(BeEmpty(), "a default-version Sandbox claimed a 17 member")
		same := withVersion(ct.NewSandbox(ns, "same", "version-same", "postgres"), "17")
		Expect(k8sClient.Create(ctx, same)).To(Succeed())
		ct.WaitReady(same)
		Expect(ct.Get(same).Status.Claims).To(HaveKey("postgres"), "a 17 Sandbox was not served from the 17 pool")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
	})
})
