package sandboxpool_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A claimed member holds its agent's data: it serves the Sandbox that claimed it
// and no other, even one of the same agentID made after it (issue 37, item 1).
var _ = Describe("Warm pools, a claimed member whose Sandbox went without its teardown", func() {
	var (
		host *ct.EngineSim
		ns   string
		pool *sandboxv1.SandboxPool
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		opts := ct.TestOptions()
		opts.GracePeriod = 2 * time.Second
		opts.SweepInterval = 500 * time.Millisecond
		stop := ct.StartManager(host, opts)
		DeferCleanup(func() { stop() })
		pool = ct.NewPool(ns, "redis", "redis", 2)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool)).Should(Equal([3]int64{2, 2, 0}))
	})

	// claimed makes a Sandbox of agentID served by a member, and has its agent
	// write into it; it returns the Sandbox and the member.
	claimed := func(name, agentID string) (*sandboxv1.Sandbox, string) {
		sb := ct.NewSandbox(ns, name, agentID, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		id := ct.WaitReady(sb).Status.Services[0].ContainerID
		Expect(ct.Get(sb).Status.Claims).To(HaveKey("redis"), "not served by a member")
		host.Write(id, "the first agent's key")
		return sb, id
	}

	// leftover is claimed, then its Sandbox deleted with its finalizer removed by
	// hand. The sweep cannot remove the member until release is called (so the
	// next Sandbox meets it whatever the load).
	leftover := func(agentID string) (id string, release func()) {
		sb, id := claimed("first", agentID)
		release = host.Inject(fake.Fault{Verb: fake.VerbRemove, Ref: id, Err: dd.ErrUnavailable})
		DeferCleanup(release)
		ct.StripFinalizers(ct.Get(sb))
		Eventually(ct.Gone(sb)).Should(BeTrue())
		return id, release
	}

	// neverServed checks, for a while, that next is never served by the member id,
	// that nothing reports the member recovered for it, and that the member was
	// not rotated to next's password.
	neverServed := func(next *sandboxv1.Sandbox, id string) {
		Consistently(func() []string {
			var out []string
			for _, s := range ct.Get(next).Status.Services {
				out = append(out, s.ContainerID)
			}
			return append(out, ct.EventReasons(next)()...)
		}, 3*time.Second, 100*time.Millisecond).ShouldNot(ContainElement(BeElementOf(id, sandboxv1.EventClaimRecovered)),
			"the leftover member of another Sandbox served the new one")
		Expect(ct.RedisPing(host, id, ct.SecretOf(next)["ROBOCO_TEST_REDIS_PASSWORD"])).NotTo(Equal("PONG"))
	}

	// readyWithoutIt waits, once the member can be removed, for the sweep to reap
	// it and next to go Ready in another container, which holds nothing of the
	// first agent's.
	readyWithoutIt := func(next *sandboxv1.Sandbox, id string, release func()) {
		release()
		Eventually(func() bool { _, ok := host.Peek(id); return ok }, "20s").Should(BeFalse(), "the leftover member was not reaped")
		served := ct.WaitReady(next).Status.Services[0].ContainerID
		Expect(served).NotTo(Equal(id))
		Expect(host.Holds(served)).To(BeEmpty(), "the new Sandbox holds the first agent's data")
		Expect(ct.EventReasons(next)()).NotTo(ContainElement(sandboxv1.EventClaimRecovered))
	}

	It("is never served to a new Sandbox of its agentID that starts cold (policy Never, the pool scaled to 0), and is reaped so that one goes Ready", func() {
		id, release := leftover("left-1")
		ct.EditPool(pool, func(s *sandboxv1.SandboxPoolSpec) { s.Replicas = ptr.To(int32(0)) })
		Eventually(func() int { return len(unclaimedMembers(host, pool)) }).Should(BeZero())

		next := ct.NewSandbox(ns, "second", "left-1", "redis")
		next.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}
		Expect(k8sClient.Create(ctx, next)).To(Succeed())
		neverServed(next, id)
		Expect(ct.Condition(next, sandboxv1.ConditionStalled)()).To(Equal("True/NameConflict"))
		Expect(ct.ConditionOf(next, sandboxv1.ConditionStalled).Message).To(ContainSubstring("orphan sweep"))
		readyWithoutIt(next, id, release)
		Expect(ct.Get(next).Status.Claims).To(BeEmpty())
	})

	It("is never served to a new Sandbox of its agentID that claims from a full pool, and is reaped so that one goes Ready", func() {
		id, release := leftover("left-2")
		Eventually(func() int { return len(unclaimedMembers(host, pool)) }).Should(Equal(2))

		next := ct.NewSandbox(ns, "third", "left-2", "redis")
		Expect(k8sClient.Create(ctx, next)).To(Succeed())
		neverServed(next, id)
		readyWithoutIt(next, id, release)
	})

	It("is never taken by another Sandbox of its agentID while its own Sandbox lives", func() {
		holder, id := claimed("holder", "left-3")
		squatter := ct.NewSandbox(ns, "squatter", "left-3", "redis")
		squatter.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		neverServed(squatter, id)
		Eventually(ct.Condition(squatter, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(ct.RedisPing(host, id, ct.SecretOf(holder)["ROBOCO_TEST_REDIS_PASSWORD"])).To(Equal("PONG"))
		Expect(ct.WaitReady(holder).Status.Services[0].ContainerID).To(Equal(id))
		Expect(host.Holds(id)).To(Equal("the first agent's key"))
	})
})

// unclaimedMembers are a pool's members not claimed (still named as members).
func unclaimedMembers(host *ct.EngineSim, p *sandboxv1.SandboxPool) []dd.ContainerSummary {
	var out []dd.ContainerSummary
	for _, m := range ct.Members(host, p) {
		if ct.IsMember(m) {
			out = append(out, m)
		}
	}
	return out
}
