package sandboxpool_test

import (
	"maps"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// servedBy lists the containers named as sb's service of engine, and checks that
// no other Sandbox's record names any of them.
func servedBy(host *ct.EngineSim, sb *sandboxv1.Sandbox, engine string) []dd.ContainerSummary {
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

var _ = Describe("Warm pools, when a claim is cut short", func() {
	var (
		host *ct.EngineSim
		ns   string
		stop func()
		pool *sandboxv1.SandboxPool
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		opts := ct.TestOptions()
		opts.GracePeriod = 2 * time.Second
		opts.SweepInterval = 500 * time.Millisecond
		stop = ct.StartManager(host, opts)
		DeferCleanup(func() { stop() })
		pool = ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
	})

	It("replaces a recorded member whose rename failed, and leaks it not", func() {
		clear := host.Inject(fake.Fault{Verb: fake.VerbRename, Err: dd.ErrUnavailable, Times: 1})
		defer clear()
		sb := ct.NewSandbox(ns, "rename", "rename-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		first := claimsOn(got)
		Expect(servedBy(host, got, "redis")).To(HaveLen(1))
		id := got.Status.Services[0].ContainerID
		Expect(first).To(HavePrefix(id+"/"), "the record names another container than the service")
		// The first member recorded was removed: no member of the pool is left
		// without a Sandbox or a place in the pool.
		Eventually(func() []string {
			var stray []string
			for _, m := range ct.Members(host, pool) {
				if m.ID != id && !ct.IsMember(m) {
					stray = append(stray, m.Name)
				}
			}
			return stray
		}).Should(BeEmpty())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
	})

	It("finishes a claim whose rotation failed after the rename: same container, the Sandbox's password", func() {
		sb := ct.NewSandbox(ns, "rotate", "rotate-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		first := ct.WaitReady(sb).Status.Services[0].ContainerID
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 1, Stderr: "killed"}, Times: 1})
		defer clear()
		second := ct.Reclaim(host, sb, first)
		got := ct.Get(sb)
		cs := servedBy(host, got, "redis")
		Expect(cs).To(HaveLen(1))
		Expect(cs[0].ID).To(Equal(second))
		Expect(ct.RedisPing(host, second, ct.SecretOf(got)["ROBOCO_TEST_REDIS_PASSWORD"])).To(Equal("PONG"))
	})

	It("keeps serving a claimed member when a plain Update drops every annotation and changes the spec, through the sweeps", func() {
		sb := ct.NewSandbox(ns, "replaced", "replaced-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		id := got.Status.Services[0].ContainerID
		Expect(servedBy(host, got, "redis")[0].Labels).To(HaveKey(shost.LabelPoolUID), "not served by a member")
		reaped := ct.MetricValue("sandbox_orphans_reaped_total", map[string]string{"kind": "pool"})

		By("an orchestrator's read-modify-write: its annotations emptied, spec.ttl changed")
		cur := ct.Get(sb)
		cur.Annotations = map[string]string{}
		cur.Spec.TTL = &metav1.Duration{Duration: 4 * time.Hour}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Consistently(func() []string {
			var ids []string
			for _, c := range servedBy(host, ct.Get(sb), "redis") {
				ids = append(ids, c.ID)
			}
			return ids
		}, 4*time.Second, 100*time.Millisecond).Should(Equal([]string{id}), "another container serves it after the update (the sweep runs every 500ms)")
		Expect(sandboxv1.IsReady(ct.Get(sb))).To(BeTrue())
		Expect(ct.Get(sb).Status.Services[0].ContainerID).To(Equal(id))
		Expect(ct.MetricValue("sandbox_orphans_reaped_total", map[string]string{"kind": "pool"})).To(Equal(reaped))
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventRecreated))
	})

	It("ignores, reports and removes a claim annotation naming a container it did not claim; takes and removes nothing", func() {
		victim := ct.NewSandbox(ns, "victim", "victim-1", "redis")
		Expect(k8sClient.Create(ctx, victim)).To(Succeed())
		victimID := ct.WaitReady(victim).Status.Services[0].ContainerID
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
		unclaimed := ct.Members(host, pool)
		Expect(unclaimed).NotTo(BeEmpty())

		forger := ct.NewSandbox(ns, "forger", "forger-1", "redis")
		forger.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}
		Expect(k8sClient.Create(ctx, forger)).To(Succeed())
		ownID := ct.WaitReady(forger).Status.Services[0].ContainerID
		for _, target := range []string{victimID, unclaimed[0].ID} {
			cur := ct.Get(forger)
			patch := client.MergeFrom(cur.DeepCopy())
			metav1.SetMetaDataAnnotation(&cur.ObjectMeta, sandboxv1.AnnotationClaimPrefix+"redis", target+"/x")
			Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
			Eventually(func() map[string]string { return ct.Get(forger).Annotations }).ShouldNot(HaveKey(sandboxv1.AnnotationClaimPrefix + "redis"))
		}
		Eventually(ct.EventReasons(forger)).Should(ContainElement(sandboxv1.EventClaimRecordIgnored))
		Consistently(func() bool {
			_, victimKept := host.Peek(victimID)
			_, memberKept := host.Peek(unclaimed[0].ID)
			return victimKept && memberKept
		}, 2*time.Second).Should(BeTrue(), "a forged record got a container removed")
		Expect(ct.Get(forger).Status.Claims).To(BeEmpty())
		Expect(ct.Get(forger).Status.Services[0].ContainerID).To(Equal(ownID))
		Expect(ct.Get(victim).Status.Services[0].ContainerID).To(Equal(victimID))
	})

	It("keeps a claim an earlier release recorded in an annotation: the same container, recorded in status, the annotation gone", func() {
		sb := ct.NewSandbox(ns, "upgraded", "upgraded-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		id, record := got.Status.Services[0].ContainerID, claimsOn(got)
		stop()
		cur := ct.Get(sb)
		cur.Status.Claims = nil
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		cur = ct.Get(sb)
		patch := client.MergeFrom(cur.DeepCopy())
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, sandboxv1.AnnotationClaimPrefix+"redis", record)
		Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
		opts := ct.TestOptions()
		opts.SweepInterval = 500 * time.Millisecond
		stop = ct.StartManager(host, opts)
		Eventually(func() string { return claimsOn(ct.Get(sb)) }).Should(Equal(record))
		Eventually(func() map[string]string { return ct.Get(sb).Annotations }).ShouldNot(HaveKey(sandboxv1.AnnotationClaimPrefix + "redis"))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventClaimRecovered))
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventClaimRecordIgnored))
		Expect(ct.WaitReady(sb).Status.Services[0].ContainerID).To(Equal(id))
		Expect(servedBy(host, ct.Get(sb), "redis")).To(HaveLen(1))
	})

	It("stalls a Sandbox whose name another namespace's claimed member holds, without telling anyone to remove that member", func() {
		sb := ct.NewSandbox(ns, "holder", "shared-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		other := ct.NewSandbox(ct.NewNamespace(), "squatter", "shared-1", "redis")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(ct.Condition(other, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		msg := ct.ConditionOf(other, sandboxv1.ConditionStalled).Message
		// Note: the name check sees the holder's published name before Docker's
		// conflict would; either way the member is never touched.
		Expect(msg).To(ContainSubstring("belongs to a Sandbox of another namespace"))
		Expect(msg).NotTo(ContainSubstring("remove it"))
		_, kept := host.Peek(id)
		Expect(kept).To(BeTrue())
	})

	It("reaps a claimed member whose Sandbox went without its teardown, and the members of a pool gone the same way", func() {
		sb := ct.NewSandbox(ns, "forced", "forced-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		ct.StripFinalizers(ct.Get(sb))
		Eventually(func() bool { _, ok := host.Peek(id); return ok }, "10s").Should(BeFalse(), "the claimed member leaked")

		p := ct.GetPool(pool)
		ct.StripFinalizers(p)
		Eventually(func() []dd.ContainerSummary { return ct.Members(host, p) }, "10s").Should(BeEmpty(), "the pool's members leaked")
	})

	It("replaces a member a crash left created, never started", func() {
		ms := ct.Members(host, pool)
		Expect(ms).To(HaveLen(2))
		stop()
		// As a manager killed between a member's create and its start leaves it.
		full, ok := host.Peek(ms[0].ID)
		Expect(ok).To(BeTrue())
		labels := maps.Clone(full.Labels)
		labels[shost.LabelMember] = "cut0short0000000"
		left, err := host.SeedContainer(dd.ContainerSpec{Name: ms[0].Name[:len(ms[0].Name)-16] + "cut0short0000000",
			Image: full.Image, Labels: labels, Network: ct.TestNetwork}, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(host.DeleteContainer(ms[0].ID)).To(Succeed())
		stop = ct.StartManager(host, ct.TestOptions())

		Eventually(func() bool { _, ok := host.Peek(left.ID); return ok }).Should(BeFalse(),
			func() string { return "the member left created is still there: " + ct.PoolDescribe(pool)() })
		Eventually(func() []dd.State {
			var states []dd.State
			for _, m := range ct.Members(host, pool) {
				states = append(states, m.State)
			}
			return states
		}).Should(Equal([]dd.State{dd.StateRunning, dd.StateRunning}))
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}), ct.PoolDescribe(pool))
	})

	It("replaces members older than maxAge", func() {
		before := map[string]bool{}
		for _, m := range ct.Members(host, pool) {
			before[m.ID] = true
		}
		ct.EditPool(pool, func(s *sandboxv1.SandboxPoolSpec) { s.MaxAge = &metav1.Duration{Duration: time.Second} })
		Eventually(func() bool {
			ms := ct.Members(host, pool)
			for _, m := range ms {
				if before[m.ID] {
					return false
				}
			}
			return len(ms) > 0
		}, "10s").Should(BeTrue())
	})
})

// claimsOn is sb's claim record of its redis service, "<container ID>/<credentials>".
func claimsOn(sb *sandboxv1.Sandbox) string {
	c, ok := sb.Status.Claims["redis"]
	if !ok {
		return ""
	}
	return c.ContainerID + "/" + c.Credentials
}

var _ = Describe("Warm pools whose members cannot start", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		stop := ct.StartManager(host, ct.TestOptions()) // members' probe deadline: 3s
		DeferCleanup(func() { stop() })
	})

	// creates counts the members made for pool so far, removed or not.
	creates := func() int { return host.Calls(fake.VerbCreateContainer) }

	It("backs off making members that exit at start, and says the pool is stalled in their words", func() {
		clear := host.CrashOnStart("redis:8-alpine", 137, "Killed: out of memory")
		defer clear()
		pool := ct.NewPool(ns, "oom", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCondition(pool, sandboxv1.ConditionStalled), "45s").Should(Equal("True/Exited"))
		Expect(poolConditionOf(pool, sandboxv1.ConditionStalled).Message).To(ContainSubstring("members in a row failed"))
		// Note: made again every 250ms without a backoff: about 48 creates in 6s.
		from := creates()
		Consistently(func() int { return creates() - from }, 6*time.Second).Should(BeNumerically("<=", 8))

		By("a class that starts again: refilled, no longer stalled")
		clear()
		Eventually(ct.PoolCounts(pool), "60s").Should(Equal([3]int64{2, 2, 0}))
		Expect(meta.FindStatusCondition(ct.GetPool(pool).Status.Conditions, sandboxv1.ConditionStalled)).To(BeNil())
	})

	It("replaces members that never answer within their probe deadline, backing off, and says so", func() {
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 1, Stderr: "Could not connect"}})
		defer clear()
		pool := ct.NewPool(ns, "mute", "redis", 1)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCondition(pool, sandboxv1.ConditionStalled), "90s").Should(Equal("True/ProbeTimeout"))
		Expect(poolConditionOf(pool, sandboxv1.ConditionStalled).Message).To(ContainSubstring("probe deadline of 3s"))
		Eventually(ct.EventReasons(pool)).Should(ContainElement(sandboxv1.EventMemberReplaced))
	})

	It("gives a member its probe deadline however short maxAge is", func() {
		pool := ct.NewPool(ns, "brief", "redis", 1)
		pool.Spec.MaxAge = &metav1.Duration{Duration: time.Nanosecond}
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{1, 1, 0}))
		// Note: replaced the moment it is made when maxAge is taken as it is: about
		// 24 creates in 6s; at the probe deadline (3s), 2 or 3.
		from := creates()
		Consistently(func() int { return creates() - from }, 6*time.Second).Should(BeNumerically("<=", 4))
	})
})

// poolCondition is "Status/Reason" of a pool's condition, "" when absent.
func poolCondition(p *sandboxv1.SandboxPool, t string) func() string {
	return func() string {
		if c := meta.FindStatusCondition(ct.GetPool(p).Status.Conditions, t); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return ""
	}
}

func poolConditionOf(p *sandboxv1.SandboxPool, t string) metav1.Condition {
	c := meta.FindStatusCondition(ct.GetPool(p).Status.Conditions, t)
	ExpectWithOffset(1, c).NotTo(BeNil(), "no %s condition", t)
	return *c
}

var _ = Describe("Warm pools across a change of --instance", func() {
	It("keeps serving a claimed member and manages the pool's members made under the earlier instance", func() {
		host := ct.NewHost()
		ns := ct.NewNamespace()
		opts := ct.TestOptions()
		opts.Instance = "before"
		stop := ct.StartManager(host, opts)
		pool := ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		sb := ct.NewSandbox(ns, "kept", "kept-2", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
		stop()

		opts.Instance = "after" // and "before" not listed in --legacy-instances
		stop = ct.StartManager(host, opts)
		DeferCleanup(func() { stop() })
		ct.Poke(sb)
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))
		Consistently(func() string { return ct.Get(sb).Status.Services[0].ContainerID }, 3*time.Second).Should(Equal(id))
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))

		By("deleting the pool: its members of either instance go, the claimed one stays")
		Expect(k8sClient.Delete(ctx, ct.GetPool(pool))).To(Succeed())
		Eventually(func() []string {
			var names []string
			for _, m := range ct.Members(host, pool) {
				if ct.IsMember(m) {
					names = append(names, m.Name)
				}
			}
			return names
		}, "20s").Should(BeEmpty(), "members of the earlier instance were left behind")
		_, kept := host.Peek(id)
		Expect(kept).To(BeTrue())
	})
})
