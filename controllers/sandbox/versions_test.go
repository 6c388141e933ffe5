package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// The operator offers postgres 16 (its default images) and 17.
const pg17 = "postgres:17-alpine"

func versionedOptions() controllers.Options {
	o := testOptions()
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
		sim *engineSim
		ns  string
	)
	BeforeEach(func() {
		sim = newHost()
		sim.AddRegistryImage(pg17, fake.Image{Volumes: []string{"/var/lib/postgresql/data"}})
		ns = newNamespace()
		stop := startManager(sim, versionedOptions())
		DeferCleanup(func() { stop() })
	})

	It("runs the version's image, says which version runs, and replaces the container when the version changes", func() {
		sb := withVersion(newSandbox(ns, "v17", "version-17", "postgres"), "17")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		st := get(sb).Status.Services[0]
		Expect(st.Image).To(Equal(pg17))
		Expect(st.Version).To(Equal("17"))
		first := st.ContainerID

		By("going back to the default")
		Eventually(func() error {
			cur := get(sb)
			cur.Spec.Services[0].Version = ""
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() string { return get(sb).Status.Services[0].Image }).Should(Equal("postgres:16-alpine"))
		waitReady(sb)
		st = get(sb).Status.Services[0]
		Expect(st.Version).To(Equal("16"), "the default's name")
		Expect(st.ContainerID).NotTo(Equal(first))

		By("naming the default: the same container")
		Eventually(func() error {
			cur := get(sb)
			cur.Spec.Services[0].Version = "16"
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() int64 { return get(sb).Status.ObservedGeneration }).Should(Equal(get(sb).Generation))
		Consistently(func() string { return get(sb).Status.Services[0].ContainerID }, "2s").Should(Equal(st.ContainerID))
	})

	It("stalls a version not offered, naming the offered ones, and makes nothing", func() {
		sb := withVersion(newSandbox(ns, "v99", "version-99", "postgres"), "99")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(conditionOf(sb, sandboxv1.ConditionStalled).Message).To(
			Equal(`postgres version "99" is not offered; offered: 16 (default, or leave version empty), 17`))
		Expect(containersOf(sim, sb)).To(BeEmpty())
	})

	It("never serves a Sandbox of one version from a pool of another", func() {
		pool := newPool(ns, "pg17", "postgres", 1)
		pool.Spec.Service.Version = "17"
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{1, 1, 0}), poolDescribe(pool))
		sb := newSandbox(ns, "default", "version-default", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		waitReady(sb)
		Expect(get(sb).Status.Claims).To(BeEmpty(), "a default-version Sandbox claimed a 17 member")
		same := withVersion(newSandbox(ns, "same", "version-same", "postgres"), "17")
		Expect(k8sClient.Create(ctx, same)).To(Succeed())
		waitReady(same)
		Expect(get(same).Status.Claims).To(HaveKey("postgres"), "a 17 Sandbox was not served from the 17 pool")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
	})
})
