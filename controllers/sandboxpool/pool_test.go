package sandboxpool_test

import (
	"fmt"
	"maps"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// ownPassword is the password a redis member's config file holds.
func ownPassword(host *ct.EngineSim, id string) string {
	conf, ok := host.File(id, "/run/secrets/redis.conf")
	ExpectWithOffset(1, ok).To(BeTrue(), "no config file in %s", id)
	first, _, _ := strings.Cut(string(conf), "\n") // requirepass comes first; other settings follow
	return strings.TrimPrefix(first, "requirepass ")
}

// claimedFromPool makes a full redis pool of n and a Sandbox named name served
// by one of its members, and waits for the pool to refill. It returns the pool,
// the Sandbox and the container serving it.
func claimedFromPool(ns, name string, n int32) (*sandboxv1.SandboxPool, *sandboxv1.Sandbox, string) {
	pool := ct.NewPool(ns, "redis", "redis", n)
	ExpectWithOffset(1, k8sClient.Create(ctx, pool)).To(Succeed())
	EventuallyWithOffset(1, ct.PoolCounts(pool)).Should(Equal([3]int64{int64(n), int64(n), 0}))
	sb := ct.NewSandbox(ns, name, name+"-1", "redis")
	ExpectWithOffset(1, k8sClient.Create(ctx, sb)).To(Succeed())
	first := ct.WaitReady(sb).Status.Services[0].ContainerID
	EventuallyWithOffset(1, ct.PoolCounts(pool)).Should(Equal([3]int64{int64(n), int64(n), 1}))
	return pool, sb, first
}

// claimedThenSlow is claimedFromPool, then makes every exec in
// the pool's unclaimed members take delay (a later claim's rotation among
// them). It returns the pool, the Sandbox and the container serving it.
func claimedThenSlow(host *ct.EngineSim, ns, name string, n int32, delay time.Duration) (*sandboxv1.SandboxPool, *sandboxv1.Sandbox, string) {
	pool, sb, first := claimedFromPool(ns, name, n)
	for _, m := range ct.Members(host, pool) {
		if m.ID != first {
			DeferCleanup(host.Inject(fake.Fault{Verb: fake.VerbExec, Ref: m.ID, Delay: delay}))
		}
	}
	return pool, sb, first
}

var _ = Describe("Warm pools", func() {
	var (
		host *ct.EngineSim
		ns   string
		stop func()
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		stop = ct.StartManager(host, ct.TestOptions())
		DeferCleanup(func() { stop() })
	})

	It("serves a new Sandbox with a ready member: renamed, its Secret made with the member's own password (not rotated), and refills", func() {
		pool := ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		before := map[string]string{} // member ID → its password
		for _, m := range ct.Members(host, pool) {
			before[m.ID] = ownPassword(host, m.ID)
		}

		confs := map[string]string{}
		for _, m := range ct.Members(host, pool) {
			conf, _ := host.File(m.ID, "/run/secrets/redis.conf")
			confs[m.ID] = string(conf)
		}
		sb := ct.NewSandbox(ns, "warm", "warm-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := ct.WaitReady(sb)
		id := got.Status.Services[0].ContainerID
		conf, _ := host.File(id, "/run/secrets/redis.conf")
		Expect(string(conf)).To(Equal(confs[id]), "the claim rewrote the member's credentials")
		Expect(before).To(HaveKey(id), "the service is not one of the pool's members")
		c, ok := host.Peek(id)
		Expect(ok).To(BeTrue())
		Expect(c.Name).To(Equal("roboco-sandbox-redis-warm-1"))
		Expect(got.Status.Services[0].Host).To(Equal("roboco-sandbox-redis-warm-1"))
		Expect(got.Status.Claims).To(HaveKeyWithValue("redis", HaveField("ContainerID", id)))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventClaimed))

		password := ct.SecretOf(sb)["ROBOCO_TEST_REDIS_PASSWORD"]
		Expect(password).To(Equal(before[id]), "the Secret does not hold the member's own password")
		Expect(ct.RedisPing(host, id, password)).To(Equal("PONG"))
		for mid, pw := range before {
			if mid != id {
				Expect(pw).NotTo(Equal(password), "another member answers to the Sandbox's password")
			}
		}

		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
	})

	It("claims for a service whose Secret exists (its container vanished) by rotating a member to the Secret's password", func() {
		_, sb, first := claimedFromPool(ns, "again", 2)
		password := ct.SecretOf(sb)["ROBOCO_TEST_REDIS_PASSWORD"]

		second := ct.Reclaim(host, sb, first)
		Expect(ct.Get(sb).Status.Claims).To(HaveKeyWithValue("redis", HaveField("ContainerID", second)))
		Expect(ct.SecretOf(sb)["ROBOCO_TEST_REDIS_PASSWORD"]).To(Equal(password), "the Secret changed")
		Expect(ct.RedisPing(host, second, password)).To(Equal("PONG"))
	})

	It("holds its refill while a claim's rotation runs, and refills once it is done", func() {
		pool, sb, first := claimedThenSlow(host, ns, "held", 2, 1500*time.Millisecond)

		from := time.Now()
		Expect(host.DeleteContainer(first)).To(Succeed())
		Eventually(func() string { return ct.Get(sb).Status.Claims["redis"].ContainerID }).ShouldNot(Equal(first))
		// Note: the window is the rotation's first second (its exec is held 1.5s),
		// measured from when it began, not from when the spec saw the claim: a
		// spec that looks late counts no refill that rightly followed it.
		var rotating time.Time
		Eventually(func() (ok bool) {
			rotating, ok = host.StepStarted(ct.Get(sb).Status.Claims["redis"].ContainerID, "rotate")
			return ok
		}).Should(BeTrue(), "the claim did not rotate")
		until := rotating.Add(time.Second)
		Consistently(func() int { return host.CreatesBetween(from, until) }, max(time.Until(until), 0), 20*time.Millisecond).
			Should(BeZero(), "a refill started while the claim was rotating")
		ct.WaitReady(sb)
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
	})

	It("refills at once during a claim when the pool has no ready member left", func() {
		// Note: the rotation outlasts the refill's deadline, which holds at a load of 10+.
		pool, sb, first := claimedThenSlow(host, ns, "empty", 1, 10*time.Second)

		creates := host.Calls(fake.VerbCreateContainer)
		Expect(host.DeleteContainer(first)).To(Succeed())
		Eventually(func() int { return host.Calls(fake.VerbCreateContainer) - creates }, 8*time.Second, 20*time.Millisecond).
			Should(BeNumerically(">", 0), "the emptied pool did not refill")
		Expect(ct.Get(sb).Status.Services[0].ContainerID).To(Equal(first), "the refill waited for the claim")
		next := ct.Reclaimed(sb, first)
		Expect(ct.Get(sb).Status.Claims).To(HaveKeyWithValue("redis", HaveField("ContainerID", next)), "not served by the pool")
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{1, 1, 1}))
	})

	It("starts cold when the Sandbox opts out, or its class matches no pool", func() {
		pool := ct.NewPool(ns, "redis", "redis", 1)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{1, 1, 0}))

		never := ct.NewSandbox(ns, "never", "never-1", "redis")
		never.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}
		other := ct.NewSandbox(ns, "other", "other-1", "postgres")
		Expect(k8sClient.Create(ctx, never)).To(Succeed())
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		for _, sb := range []*sandboxv1.Sandbox{never, other} {
			got := ct.WaitReady(sb)
			Expect(ct.ContainersOf(host, got)).To(HaveLen(1), "not provisioned cold")
			Expect(got.Status.Claims).To(BeEmpty())
		}
		Expect(ct.PoolCounts(pool)()).To(Equal([3]int64{1, 1, 0}))
	})

	It("keeps a claimed member through a restart with the status lost, and tears it down with its Sandbox", func() {
		pool := ct.NewPool(ns, "redis", "redis", 1)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{1, 1, 0}))
		sb := ct.NewSandbox(ns, "kept", "kept-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID

		stop()
		cleared := ct.Get(sb)
		cleared.Status = sandboxv1.SandboxStatus{}
		Expect(k8sClient.Status().Update(ctx, cleared)).To(Succeed())
		stop = ct.StartManager(host, ct.TestOptions())
		Eventually(func() string {
			got := ct.Get(sb)
			if len(got.Status.Services) == 0 || !got.Status.Services[0].Ready {
				return ""
			}
			return got.Status.Services[0].ContainerID
		}).Should(Equal(id), "the claimed member was not adopted again")
		_, ok := host.Peek(id)
		Expect(ok).To(BeTrue())

		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		_, ok = host.Peek(id)
		Expect(ok).To(BeFalse(), "the claimed member outlived its Sandbox")
	})

	It("offers after a restart no member a claim record names, renamed or not (its password may be in that Sandbox's Secret)", func() {
		pool := ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		recorded := map[string]bool{}
		stop()
		By("a manager killed after recording two claims, before their renames")
		for i, m := range ct.Members(host, pool) {
			holder := ct.NewSandbox(ns, fmt.Sprintf("holder-%d", i), fmt.Sprintf("holder-%d", i), "redis")
			holder.Spec.DockerHost = "elsewhere" // no manager here drives it
			Expect(k8sClient.Create(ctx, holder)).To(Succeed())
			patch := fmt.Sprintf(`{"status":{"claims":{"redis":{"containerID":%q,"credentials":"x"}}}}`, m.ID)
			Expect(k8sClient.Status().Patch(ctx, holder, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
			recorded[m.ID] = true
		}
		stop = ct.StartManager(host, ct.TestOptions())

		sb := ct.NewSandbox(ns, "after", "after-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		Expect(recorded).NotTo(HaveKey(id), "a member another Sandbox records serves this one")
		for mid := range recorded {
			c, ok := host.Peek(mid)
			Expect(ok).To(BeTrue(), "a recorded member was removed")
			Expect(shost.IsMemberName(c.Name)).To(BeTrue(), "a recorded member was renamed")
		}
	})

	It("keeps a member renamed for a new Sandbox before its Secret was made, and makes the Secret with that member's own password", func() {
		pool := ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		m, other := ct.Members(host, pool)[0], ct.Members(host, pool)[1]
		own := ownPassword(host, m.ID)
		stop()
		By("a manager killed after recording the claim and renaming the member, before the Secret's create landed")
		sb := ct.NewSandbox(ns, "kept", "kept-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		patch := fmt.Sprintf(`{"status":{"claims":{"redis":{"containerID":%q,"credentials":%q}}}}`, m.ID, shost.CredentialsHash(own))
		Expect(k8sClient.Status().Patch(ctx, sb, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		Expect(host.Rename(ctx, m.ID, "roboco-sandbox-redis-kept-1")).To(Succeed())
		stop = ct.StartManager(host, ct.TestOptions())

		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].ContainerID).To(Equal(m.ID), "the renamed member was replaced")
		Expect(ct.SecretOf(sb)["ROBOCO_TEST_REDIS_PASSWORD"]).To(Equal(own), "the Secret does not hold the member's own password")
		Expect(ct.RedisPing(host, m.ID, own)).To(Equal("PONG"))
		c, ok := host.Peek(other.ID)
		Expect(ok).To(BeTrue(), "the other member was taken for the Sandbox and removed")
		Expect(shost.IsMemberName(c.Name)).To(BeTrue(), "the other member was renamed")
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 1}))
	})

	It("removes its unclaimed members when the pool is deleted, and leaves the claimed ones to their Sandboxes", func() {
		pool := ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
		sb := ct.NewSandbox(ns, "stays", "stays-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID

		Expect(k8sClient.Delete(ctx, pool)).To(Succeed())
		Eventually(func() []string {
			var names []string
			for _, m := range ct.Members(host, pool) {
				names = append(names, m.Name)
			}
			return names
		}).Should(ConsistOf("roboco-sandbox-redis-stays-1"))
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), &sandboxv1.SandboxPool{}) }).ShouldNot(Succeed())
		Expect(ct.WaitReady(sb).Status.Services[0].ContainerID).To(Equal(id))
	})

	It("shows upstream's janitor no pool member, claimed or not", func() {
		pool := ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}), ct.PoolDescribe(pool))
		sb := ct.NewSandbox(ns, "hidden", "hidden-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		// Note: the janitor lists containers labelled roboco.sandbox=1 and reaps
		// those whose roboco.sandbox.owner container is gone.
		seen, err := host.List(ctx, map[string]string{shost.LabelSandbox: shost.LabelSandboxTrue})
		Expect(err).NotTo(HaveOccurred())
		for _, m := range ct.Members(host, pool) {
			Expect(seen).NotTo(ContainElement(HaveField("ID", m.ID)), "the janitor would judge member %s", m.Name)
			Expect(m.Labels).NotTo(HaveKey(shost.LabelOwner))
		}
	})

	It("starts at most --pool-refills members at once: a member counts until it answers, not only while it is created", func() {
		stop()
		opts := ct.TestOptions()
		opts.PoolRefills = 1
		// Note: the member keeps starting through the window below, however late
		// the load lets it be seen (at the suite's 3s deadline it was replaced).
		opts.ProbeDeadlines = maps.Clone(opts.ProbeDeadlines)
		opts.ProbeDeadlines["redis"] = time.Minute
		stop = ct.StartManager(host, opts)
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 1, Stderr: "Could not connect"}})
		pool := ct.NewPool(ns, "redis", "redis", 3)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(func() int { return len(ct.Members(host, pool)) }).Should(Equal(1))
		Consistently(func() int { return len(ct.Members(host, pool)) }, "2s").Should(Equal(1),
			"a second member was started while the first still starts")
		clear()
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{3, 3, 0}))
	})

	It("creates at most --pool-refills members at once, and replaces members of a class the operator changed", func() {
		stop()
		opts := ct.TestOptions()
		opts.PoolRefills = 1
		stop = ct.StartManager(host, opts)
		pool := ct.NewPool(ns, "redis", "redis", 4)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{4, 4, 0}))
		Expect(host.PeakConcurrency("create")).To(Equal(1))

		before := map[string]bool{}
		for _, m := range ct.Members(host, pool) {
			before[m.ID] = true
		}
		stop()
		opts.DefaultMemory = resource.MustParse("256Mi")
		stop = ct.StartManager(host, opts)
		Eventually(func() int {
			n := 0
			for _, m := range ct.Members(host, pool) {
				if !before[m.ID] {
					n++
				}
			}
			return n
		}).Should(Equal(4), "the members of the old class were not all replaced")
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{4, 4, 0}))
	})
})
