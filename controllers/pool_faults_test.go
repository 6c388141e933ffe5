package controllers_test

import (
	"maps"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// servedBy lists the containers named as sb's service of engine, and checks that
// no other Sandbox's record names any of them.
func servedBy(host *engineSim, sb *sandboxv1.Sandbox, engine string) []dd.ContainerSummary {
	all, err := host.List(ctx, nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []dd.ContainerSummary
	for _, c := range all {
		if c.Name == "roboco-sandbox-"+map[string]string{"redis": "redis", "postgres": "pg"}[engine]+"-"+sb.Spec.AgentID {
			out = append(out, c)
		}
	}
	return out
}

// stripFinalizers deletes obj without letting its finalizer run (a force).
func stripFinalizers(obj client.Object) {
	Expect(k8sClient.Delete(ctx, obj)).To(Succeed())
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetFinalizers(nil)
	Expect(client.IgnoreNotFound(k8sClient.Patch(ctx, obj, patch))).To(Succeed())
}

var _ = Describe("Warm pools, when a claim is cut short", func() {
	var (
		host *engineSim
		ns   string
		stop func()
		pool *sandboxv1.SandboxPool
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
		opts := testOptions()
		opts.GracePeriod = 2 * time.Second
		opts.SweepInterval = 500 * time.Millisecond
		stop = startManager(host, opts)
		DeferCleanup(func() { stop() })
		pool = newPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
	})

	It("replaces a recorded member whose rename failed, and leaks it not", func() {
		clear := host.Inject(fake.Fault{Verb: fake.VerbRename, Err: dd.ErrUnavailable, Times: 1})
		defer clear()
		sb := newSandbox(ns, "rename", "rename-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := waitReady(sb)
		first := claimsOn(got)
		Expect(servedBy(host, got, "redis")).To(HaveLen(1))
		id := got.Status.Services[0].ContainerID
		Expect(first).To(HavePrefix(id+"/"), "the record names another container than the service")
		// The first member recorded was removed: no member of the pool is left
		// without a Sandbox or a place in the pool.
		Eventually(func() []string {
			var stray []string
			for _, m := range members(host, pool) {
				if m.ID != id && !isMember(m) {
					stray = append(stray, m.Name)
				}
			}
			return stray
		}).Should(BeEmpty())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
	})

	It("finishes a claim whose rotation failed after the rename: same container, the Sandbox's password", func() {
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 1, Stderr: "killed"}, Times: 1})
		defer clear()
		sb := newSandbox(ns, "rotate", "rotate-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := waitReady(sb)
		cs := servedBy(host, got, "redis")
		Expect(cs).To(HaveLen(1))
		Expect(cs[0].Labels).To(HaveKey(shost.LabelPoolUID), "not served by a member")
		Expect(redisPing(host, cs[0].ID, secretOf(got)["ROBOCO_TEST_REDIS_PASSWORD"])).To(Equal("PONG"))
	})

	It("reaps a claimed member whose Sandbox went without its teardown, and the members of a pool gone the same way", func() {
		sb := newSandbox(ns, "forced", "forced-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID
		stripFinalizers(get(sb))
		Eventually(func() bool { _, ok := host.Peek(id); return ok }, "10s").Should(BeFalse(), "the claimed member leaked")

		p := getPool(pool)
		stripFinalizers(p)
		Eventually(func() []dd.ContainerSummary { return members(host, p) }, "10s").Should(BeEmpty(), "the pool's members leaked")
	})

	It("replaces a member a crash left created, never started", func() {
		ms := members(host, pool)
		Expect(ms).To(HaveLen(2))
		stop()
		// As a manager killed between a member's create and its start leaves it.
		full, ok := host.Peek(ms[0].ID)
		Expect(ok).To(BeTrue())
		labels := maps.Clone(full.Labels)
		labels[shost.LabelMember] = "cut0short0000000"
		left, err := host.SeedContainer(dd.ContainerSpec{Name: ms[0].Name[:len(ms[0].Name)-16] + "cut0short0000000",
			Image: full.Image, Labels: labels, Network: testNetwork}, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(host.DeleteContainer(ms[0].ID)).To(Succeed())
		stop = startManager(host, testOptions())

		Eventually(func() bool { _, ok := host.Peek(left.ID); return ok }).Should(BeFalse(),
			func() string { return "the member left created is still there: " + poolDescribe(pool)() })
		Eventually(func() []dd.State {
			var states []dd.State
			for _, m := range members(host, pool) {
				states = append(states, m.State)
			}
			return states
		}).Should(Equal([]dd.State{dd.StateRunning, dd.StateRunning}))
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 0}), poolDescribe(pool))
	})

	It("replaces members older than maxAge", func() {
		before := map[string]bool{}
		for _, m := range members(host, pool) {
			before[m.ID] = true
		}
		p := getPool(pool)
		p.Spec.MaxAge = &metav1.Duration{Duration: time.Second}
		Expect(k8sClient.Update(ctx, p)).To(Succeed())
		Eventually(func() bool {
			ms := members(host, pool)
			for _, m := range ms {
				if before[m.ID] {
					return false
				}
			}
			return len(ms) > 0
		}, "10s").Should(BeTrue())
	})
})

func claimsOn(sb *sandboxv1.Sandbox) string {
	return sb.Annotations[sandboxv1.AnnotationClaimPrefix+"redis"]
}

func isMember(c dd.ContainerSummary) bool { return len(c.Name) > 12 && c.Name[:12] == "sandboxpool-" }
