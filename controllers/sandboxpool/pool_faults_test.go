package controllers_test

import (
	"maps"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
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
		sb := newSandbox(ns, "rotate", "rotate-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		first := waitReady(sb).Status.Services[0].ContainerID
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 1, Stderr: "killed"}, Times: 1})
		defer clear()
		second := reclaim(host, sb, first)
		got := get(sb)
		cs := servedBy(host, got, "redis")
		Expect(cs).To(HaveLen(1))
		Expect(cs[0].ID).To(Equal(second))
		Expect(redisPing(host, second, secretOf(got)["ROBOCO_TEST_REDIS_PASSWORD"])).To(Equal("PONG"))
	})

	It("keeps serving a claimed member when a plain Update drops every annotation and changes the spec, through the sweeps", func() {
		sb := newSandbox(ns, "replaced", "replaced-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := waitReady(sb)
		id := got.Status.Services[0].ContainerID
		Expect(servedBy(host, got, "redis")[0].Labels).To(HaveKey(shost.LabelPoolUID), "not served by a member")
		reaped := metricValue("sandbox_orphans_reaped_total", map[string]string{"kind": "pool"})

		By("an orchestrator's read-modify-write: its annotations emptied, spec.ttl changed")
		cur := get(sb)
		cur.Annotations = map[string]string{}
		cur.Spec.TTL = &metav1.Duration{Duration: 4 * time.Hour}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Consistently(func() []string {
			var ids []string
			for _, c := range servedBy(host, get(sb), "redis") {
				ids = append(ids, c.ID)
			}
			return ids
		}, 4*time.Second, 100*time.Millisecond).Should(Equal([]string{id}), "another container serves it after the update (the sweep runs every 500ms)")
		Expect(sandboxv1.IsReady(get(sb))).To(BeTrue())
		Expect(get(sb).Status.Services[0].ContainerID).To(Equal(id))
		Expect(metricValue("sandbox_orphans_reaped_total", map[string]string{"kind": "pool"})).To(Equal(reaped))
		Expect(eventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventRecreated))
	})

	It("ignores, reports and removes a claim annotation naming a container it did not claim; takes and removes nothing", func() {
		victim := newSandbox(ns, "victim", "victim-1", "redis")
		Expect(k8sClient.Create(ctx, victim)).To(Succeed())
		victimID := waitReady(victim).Status.Services[0].ContainerID
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
		unclaimed := members(host, pool)
		Expect(unclaimed).NotTo(BeEmpty())

		forger := newSandbox(ns, "forger", "forger-1", "redis")
		forger.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}
		Expect(k8sClient.Create(ctx, forger)).To(Succeed())
		ownID := waitReady(forger).Status.Services[0].ContainerID
		for _, target := range []string{victimID, unclaimed[0].ID} {
			cur := get(forger)
			patch := client.MergeFrom(cur.DeepCopy())
			metav1.SetMetaDataAnnotation(&cur.ObjectMeta, sandboxv1.AnnotationClaimPrefix+"redis", target+"/x")
			Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
			Eventually(func() map[string]string { return get(forger).Annotations }).ShouldNot(HaveKey(sandboxv1.AnnotationClaimPrefix + "redis"))
		}
		Expect(eventReasons(forger)()).To(ContainElement(sandboxv1.EventClaimRecordIgnored))
		Consistently(func() bool {
			_, victimKept := host.Peek(victimID)
			_, memberKept := host.Peek(unclaimed[0].ID)
			return victimKept && memberKept
		}, 2*time.Second).Should(BeTrue(), "a forged record got a container removed")
		Expect(get(forger).Status.Claims).To(BeEmpty())
		Expect(get(forger).Status.Services[0].ContainerID).To(Equal(ownID))
		Expect(get(victim).Status.Services[0].ContainerID).To(Equal(victimID))
	})

	It("keeps a claim an earlier release recorded in an annotation: the same container, recorded in status, the annotation gone", func() {
		sb := newSandbox(ns, "upgraded", "upgraded-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := waitReady(sb)
		id, record := got.Status.Services[0].ContainerID, claimsOn(got)
		stop()
		cur := get(sb)
		cur.Status.Claims = nil
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		cur = get(sb)
		patch := client.MergeFrom(cur.DeepCopy())
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, sandboxv1.AnnotationClaimPrefix+"redis", record)
		Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
		opts := testOptions()
		opts.SweepInterval = 500 * time.Millisecond
		stop = startManager(host, opts)
		Eventually(func() string { return claimsOn(get(sb)) }).Should(Equal(record))
		Eventually(func() map[string]string { return get(sb).Annotations }).ShouldNot(HaveKey(sandboxv1.AnnotationClaimPrefix + "redis"))
		Expect(eventReasons(sb)()).To(ContainElement(sandboxv1.EventClaimRecovered))
		Expect(eventReasons(sb)()).NotTo(ContainElement(sandboxv1.EventClaimRecordIgnored))
		Expect(waitReady(sb).Status.Services[0].ContainerID).To(Equal(id))
		Expect(servedBy(host, get(sb), "redis")).To(HaveLen(1))
	})

	It("stalls a Sandbox whose name another namespace's claimed member holds, without telling anyone to remove that member", func() {
		sb := newSandbox(ns, "holder", "shared-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID
		other := newSandbox(newNamespace(), "squatter", "shared-1", "redis")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(condition(other, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		msg := conditionOf(other, sandboxv1.ConditionStalled).Message
		// Note: the name check sees the holder's published name before Docker's
		// conflict would; either way the member is never touched.
		Expect(msg).To(ContainSubstring("belongs to a Sandbox of another namespace"))
		Expect(msg).NotTo(ContainSubstring("remove it"))
		_, kept := host.Peek(id)
		Expect(kept).To(BeTrue())
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

// claimsOn is sb's claim record of its redis service, "<container ID>/<credentials>".
func claimsOn(sb *sandboxv1.Sandbox) string {
	c, ok := sb.Status.Claims["redis"]
	if !ok {
		return ""
	}
	return c.ContainerID + "/" + c.Credentials
}

func isMember(c dd.ContainerSummary) bool { return len(c.Name) > 12 && c.Name[:12] == "sandboxpool-" }

var _ = Describe("Warm pools whose members cannot start", func() {
	var (
		host *engineSim
		ns   string
	)
	BeforeEach(func() {
		host = newHost()
		ns = newNamespace()
		stop := startManager(host, testOptions()) // members' probe deadline: 3s
		DeferCleanup(func() { stop() })
	})

	// creates counts the members made for pool so far, removed or not.
	creates := func() int { return host.Calls(fake.VerbCreateContainer) }

	It("backs off making members that exit at start, and says the pool is stalled in their words", func() {
		clear := host.crashOnStart("redis:8-alpine", 137, "Killed: out of memory")
		defer clear()
		pool := newPool(ns, "oom", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCondition(pool, sandboxv1.ConditionStalled), "45s").Should(Equal("True/Exited"))
		Expect(poolConditionOf(pool, sandboxv1.ConditionStalled).Message).To(ContainSubstring("members in a row failed"))
		// Note: made again every 250ms without a backoff: about 48 creates in 6s.
		from := creates()
		Consistently(func() int { return creates() - from }, 6*time.Second).Should(BeNumerically("<=", 8))

		By("a class that starts again: refilled, no longer stalled")
		clear()
		Eventually(poolCounts(pool), "60s").Should(Equal([3]int64{2, 2, 0}))
		Expect(meta.FindStatusCondition(getPool(pool).Status.Conditions, sandboxv1.ConditionStalled)).To(BeNil())
	})

	It("replaces members that never answer within their probe deadline, backing off, and says so", func() {
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 1, Stderr: "Could not connect"}})
		defer clear()
		pool := newPool(ns, "mute", "redis", 1)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCondition(pool, sandboxv1.ConditionStalled), "90s").Should(Equal("True/ProbeTimeout"))
		Expect(poolConditionOf(pool, sandboxv1.ConditionStalled).Message).To(ContainSubstring("probe deadline of 3s"))
		Expect(eventReasons(pool)()).To(ContainElement(sandboxv1.EventMemberReplaced))
	})

	It("gives a member its probe deadline however short maxAge is", func() {
		pool := newPool(ns, "brief", "redis", 1)
		pool.Spec.MaxAge = &metav1.Duration{Duration: time.Nanosecond}
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{1, 1, 0}))
		// Note: replaced the moment it is made when maxAge is taken as it is: about
		// 24 creates in 6s; at the probe deadline (3s), 2 or 3.
		from := creates()
		Consistently(func() int { return creates() - from }, 6*time.Second).Should(BeNumerically("<=", 4))
	})
})

// poolCondition is "Status/Reason" of a pool's condition, "" when absent.
func poolCondition(p *sandboxv1.SandboxPool, t string) func() string {
	return func() string {
		if c := meta.FindStatusCondition(getPool(p).Status.Conditions, t); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return ""
	}
}

func poolConditionOf(p *sandboxv1.SandboxPool, t string) metav1.Condition {
	c := meta.FindStatusCondition(getPool(p).Status.Conditions, t)
	ExpectWithOffset(1, c).NotTo(BeNil(), "no %s condition", t)
	return *c
}

var _ = Describe("Warm pools across a change of --instance", func() {
	It("keeps serving a claimed member and manages the pool's members made under the earlier instance", func() {
		host := newHost()
		ns := newNamespace()
		opts := testOptions()
		opts.Instance = "before"
		stop := startManager(host, opts)
		pool := newPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		sb := newSandbox(ns, "kept", "kept-2", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := waitReady(sb).Status.Services[0].ContainerID
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
		stop()

		opts.Instance = "after" // and "before" not listed in --legacy-instances
		stop = startManager(host, opts)
		DeferCleanup(func() { stop() })
		poke(sb)
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))
		Consistently(func() string { return get(sb).Status.Services[0].ContainerID }, 3*time.Second).Should(Equal(id))
		Eventually(poolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))

		By("deleting the pool: its members of either instance go, the claimed one stays")
		Expect(k8sClient.Delete(ctx, getPool(pool))).To(Succeed())
		Eventually(func() []string {
			var names []string
			for _, m := range members(host, pool) {
				if isMember(m) {
					names = append(names, m.Name)
				}
			}
			return names
		}, "20s").Should(BeEmpty(), "members of the earlier instance were left behind")
		_, kept := host.Peek(id)
		Expect(kept).To(BeTrue())
	})
})
