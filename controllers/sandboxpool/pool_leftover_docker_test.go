package sandboxpool_test

import (
	"context"
	"errors"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	goredis "github.com/redis/go-redis/v9"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// heldRemovals is the real driver, except that removing a held container fails
// as a daemon that cannot would: the spec decides when the sweep may reap a
// leftover, whatever the load.
type heldRemovals struct {
	dd.Driver
	mu   sync.Mutex
	held map[string]bool
}

func (h *heldRemovals) hold(id string) (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[id] = true
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.held, id)
	}
}

func (h *heldRemovals) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	h.mu.Lock()
	held := h.held[nameOrID]
	h.mu.Unlock()
	if held {
		return dd.NewError("remove", nameOrID, dd.ErrUnavailable, errors.New("held by the spec"))
	}
	return h.Driver.Remove(ctx, nameOrID, stopTimeout)
}

// redisKey reads key through the Secret's URL of sb, as its agent would: "" when
// it is absent.
func redisKey(sb *sandboxv1.Sandbox, key string) (string, error) {
	opts, err := goredis.ParseURL(ct.SecretOf(sb)[sandboxv1.RedisURLKey])
	if err != nil {
		return "", err
	}
	rdb := goredis.NewClient(opts)
	defer func() { _ = rdb.Close() }()
	v, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, goredis.Nil) {
		return "", nil
	}
	return v, err
}

// The data of a claimed member reaches no other agent, on the real engine
// (issue 37, item 1): its Sandbox deleted without its teardown, a new Sandbox of
// the same agentID never gets it, and goes Ready once the sweep reaped it.
var _ = Describe("Warm pools on the real Docker engine, a claimed member whose Sandbox went without its teardown", Label("docker"), func() {
	const key = "the-first-agents-key"
	var (
		driver *heldRemovals
		ns     string
		pool   *sandboxv1.SandboxPool
		agent  string
	)
	BeforeEach(func() {
		rd := ct.NewRealDocker()
		real, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(real.Close)
		Expect(real.PullImage(ctx, rd.Redis, nil)).To(Succeed())
		driver = &heldRemovals{Driver: real, held: map[string]bool{}}
		opts := ct.RealOptions(rd, 3*time.Second)
		opts.SweepInterval = 500 * time.Millisecond
		ct.StartManager(driver, opts)
		ns, agent = ct.NewNamespace(), "left-"+rd.RunID
		pool = ct.NewPool(ns, "redis", "redis", 1)
		Expect(k8sClient.Create(ctx, pool)).To(Succeed())
		Eventually(ct.PoolCounts(pool), 2*time.Minute).Should(Equal([3]int64{1, 1, 0}))
	})

	// leftover is a Sandbox served by the pool's member, its agent's key
	// written through its Secret's URL, deleted with its finalizer removed by
	// hand; the sweep cannot remove the member until release.
	leftover := func() (id string, release func()) {
		sb := ct.NewSandbox(ns, "first", agent, "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 2*time.Minute).Should(Equal("True/Ready"))
		id = ct.Get(sb).Status.Claims["redis"].ContainerID
		Expect(id).NotTo(BeEmpty(), "not served by a member")
		Eventually(func() error {
			opts, err := goredis.ParseURL(ct.SecretOf(sb)[sandboxv1.RedisURLKey])
			if err != nil {
				return err
			}
			rdb := goredis.NewClient(opts)
			defer func() { _ = rdb.Close() }()
			return rdb.Set(ctx, key, "the first agent's data", 0).Err()
		}, "30s").Should(Succeed())
		Expect(redisKey(ct.Get(sb), key)).To(Equal("the first agent's data"))
		release = driver.hold(id)
		DeferCleanup(release)
		ct.StripFinalizers(ct.Get(sb))
		Eventually(ct.Gone(sb)).Should(BeTrue())
		return id, release
	}

	// nextServed creates next and checks that it is never served by the
	// leftover id, then, the leftover released, that it is reaped and next goes
	// Ready in another container, where the first agent's key is absent.
	nextServed := func(next *sandboxv1.Sandbox, id string, release func()) {
		Expect(k8sClient.Create(ctx, next)).To(Succeed())
		Consistently(func() []string {
			var out []string
			for _, s := range ct.Get(next).Status.Services {
				out = append(out, s.ContainerID)
			}
			return append(out, ct.EventReasons(next)()...)
		}, 5*time.Second, 200*time.Millisecond).ShouldNot(ContainElement(BeElementOf(id, sandboxv1.EventClaimRecovered)),
			"the leftover member of another Sandbox served the new one")
		Expect(ct.Condition(next, sandboxv1.ConditionStalled)()).To(Equal("True/NameConflict"))

		release()
		Eventually(func() error { _, err := driver.Inspect(ctx, id); return err }, "30s").Should(MatchError(dd.ErrNotFound),
			"the leftover member was not reaped")
		Eventually(ct.Condition(next, sandboxv1.ConditionReady), 2*time.Minute).Should(Equal("True/Ready"))
		Expect(ct.Get(next).Status.Services[0].ContainerID).NotTo(Equal(id))
		Expect(ct.EventReasons(next)()).NotTo(ContainElement(sandboxv1.EventClaimRecovered))
		Eventually(func() (string, error) { return redisKey(ct.Get(next), key) }, "30s").Should(BeEmpty(),
			"the new Sandbox reads the first agent's key")
	}

	It("never serves it to a new Sandbox of its agentID that starts cold (policy Never, the pool scaled to 0)", func() {
		id, release := leftover()
		ct.EditPool(pool, func(s *sandboxv1.SandboxPoolSpec) { s.Replicas = ptr.To(int32(0)) })
		Eventually(ct.PoolCounts(pool), time.Minute).Should(Equal([3]int64{0, 0, 1})) // the leftover counts as claimed

		next := ct.NewSandbox(ns, "second", agent, "redis")
		next.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}
		nextServed(next, id, release)
		Expect(ct.Get(next).Status.Claims).To(BeEmpty())
	})

	It("never serves it to a new Sandbox of its agentID that claims from a full pool", func() {
		id, release := leftover()
		Eventually(ct.PoolCounts(pool), 2*time.Minute).Should(Equal([3]int64{1, 1, 1})) // refilled; the leftover counts as claimed
		nextServed(ct.NewSandbox(ns, "third", agent, "redis"), id, release)
	})
})
