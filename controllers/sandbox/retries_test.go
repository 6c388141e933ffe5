package sandbox_test

import (
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// hotLoopWindow is how long a failing Sandbox is watched for a hot loop. Backing
// off from 1s, a retry fits 3 or 4 times in it; a retry on its own events made
// dozens (61 creates in 10s were seen).
const hotLoopWindow = 6 * time.Second

// creates counts the create calls of a window of hotLoopWindow.
func createsIn(host *ct.EngineSim) int {
	before := host.Calls(fake.VerbCreateContainer)
	time.Sleep(hotLoopWindow)
	return host.Calls(fake.VerbCreateContainer) - before
}

// Retries back off, a Sandbox's own Docker events do not cut them short, what no
// retry can fix stalls, and a stalled Sandbox resumes when what blocked it goes.
var _ = Describe("Retries", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
		ct.StartManager(host, ct.TestOptions())
	})

	It("backs off a container whose start keeps failing, whatever its own create and destroy events say", func() {
		// Docker creates the container, refuses to start it, and the driver removes it:
		// events create and destroy, the Sandbox's own labels on both.
		clear := host.Inject(fake.Fault{Verb: fake.VerbCreateContainer, AtStart: true,
			Err: ct.ErrString("Error response from daemon: failed to create shim task: OCI runtime create failed: fork/exec: resource temporarily unavailable")})
		sb := ct.NewSandbox(ns, "startfail", "startfail-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() int { return host.Calls(fake.VerbCreateContainer) }).Should(BeNumerically(">=", 1))

		n := createsIn(host)
		AddReportEntry("creates in the window while the start keeps failing", n)
		Expect(n).To(BeNumerically("<=", 5), "creates in %s", hotLoopWindow)
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReconciling).Message).To(ContainSubstring("resource temporarily unavailable"))
		Expect(ct.Condition(sb, sandboxv1.ConditionStalled)()).To(BeEmpty(), "a retry may fix this one")
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.ReasonDockerError))

		clear()
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 30*time.Second).Should(Equal("True/Ready"))
	})

	It("replaces a container left created whose start Docker keeps refusing", func() {
		// The daemon went away during the start: the removal failed too, and the
		// task it left makes every later start of that container fail.
		host.Inject(fake.Fault{Verb: fake.VerbCreateContainer, AtStart: true, Sticks: true, Times: 1,
			Err: ct.ErrString("Error response from daemon: failed to create task for container: task 4f2e already exists: unknown")})
		sb := ct.NewSandbox(ns, "leftstuck", "leftstuck-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		var left dd.Container
		Eventually(func() bool { c, ok := host.Peek("roboco-sandbox-redis-leftstuck-1"); left = c; return ok }).Should(BeTrue())
		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].ContainerID).NotTo(Equal(left.ID))
		_, still := host.Peek(left.ID)
		Expect(still).To(BeFalse(), "the container that could not start is removed")
	})

	It("backs off a failing create while a sibling service's probes bring the passes sooner", func() {
		host.Inject(fake.Fault{Verb: fake.VerbCreateContainer, AtStart: true, Ref: "roboco-sandbox-pg-sooner-1",
			Err: ct.ErrString("Error response from daemon: failed to create task for container: task 9c1d already exists: unknown")})
		// Redis answers only after the window: its probes come every second at most.
		host.OnExec(fake.ExecRule{Container: "roboco-sandbox-redis-sooner-1", Times: 1000,
			Result: dd.ExecResult{ExitCode: 1, Stderr: "Could not connect to Redis: Connection refused"}})
		sb := ct.NewSandbox(ns, "sooner", "sooner-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() int { return host.Calls(fake.VerbCreateContainer) }).Should(BeNumerically(">=", 2))

		n := createsIn(host)
		AddReportEntry("creates in the window while one service's start keeps failing", n)
		Expect(n).To(BeNumerically("<=", 4), "creates in %s", hotLoopWindow)
	})

	It("tries a failed create again as soon as Docker's event stream resyncs, whatever the backoff says", func() {
		clear := host.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Err: dd.ErrUnavailable})
		sb := ct.NewSandbox(ns, "comeback", "comeback-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		retryIn := regexp.MustCompile(`retrying in (\d+)s`)
		Eventually(func() int {
			c := meta.FindStatusCondition(ct.Get(sb).Status.Conditions, sandboxv1.ConditionContainersRunning)
			if c == nil {
				return 0
			}
			m := retryIn.FindStringSubmatch(c.Message)
			if m == nil {
				return 0
			}
			n, _ := strconv.Atoi(m[1])
			return n
		}, time.Minute).Should(BeNumerically(">=", 15), "the backoff grows while Docker is down")

		// Docker is back: its stream resyncs, and the Sandbox goes on long before its retry was due.
		clear()
		host.DropEvents()
		host.RestoreEvents()
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 8*time.Second).Should(Equal("True/Ready"))
	})

	It("stalls with the daemon's words on a start Docker refuses for the container's config", func() {
		host.Inject(fake.Fault{Verb: fake.VerbCreateContainer, AtStart: true,
			Err: dd.NewError("start", "roboco-sandbox-redis-refused-1", dd.ErrInvalid,
				ct.ErrString(`Error response from daemon: OCI runtime create failed: failed to write "500": cpu.cfs_quota_us: invalid argument`))})
		sb := ct.NewSandbox(ns, "refused", "refused-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("cpu.cfs_quota_us: invalid argument"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("False/Failed"))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.ReasonInvalidSpec))
		Expect(createsIn(host)).To(BeZero(), "a stalled Sandbox retries only after a change (or the slow recheck)")
	})

	It("keeps the other services going while one is stalled", func() {
		_, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-sibling-1", Image: "redis:8-alpine"}, true)
		Expect(err).NotTo(HaveOccurred())
		// Postgres answers only from its third probe on: it needs the pass's requeues.
		host.OnExec(fake.ExecRule{Container: "roboco-sandbox-pg-sibling-1", Times: 2,
			Result: dd.ExecResult{ExitCode: 2, Stderr: "the database system is starting up"}})
		sb := ct.NewSandbox(ns, "sibling", "sibling-1", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Eventually(func() bool {
			for _, s := range ct.Get(sb).Status.Services {
				if s.Engine == "postgres" {
					return s.Ready
				}
			}
			return false
		}).Should(BeTrue(), "postgres is probed again though redis is stalled")
	})

	It("judges a probe's deadline from its attempts, not from a wait in the queue", func() {
		// The first probe reaches the container only after its whole deadline (3s) has
		// passed, and fails: one late attempt is no timeout.
		host.Inject(fake.Fault{Verb: fake.VerbExec, Delay: 4 * time.Second, Times: 1,
			Err: ct.ErrString("connection refused")})
		sb := ct.NewSandbox(ns, "late", "late-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Expect(ct.EventReasons(sb)()).NotTo(ContainElement(sandboxv1.ReasonProbeTimeout))
	})

	It("resumes within seconds once a foreign container holding its name is removed", func() {
		blocker, err := host.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-redis-freed-1", Image: "redis:8-alpine"}, true)
		Expect(err).NotTo(HaveOccurred())
		sb := ct.NewSandbox(ns, "freed", "freed-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(host.DeleteContainer(blocker.ID)).To(Succeed()) // docker rm -f
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 10*time.Second).Should(Equal("True/Ready"))
	})

	It("resumes within seconds once the Sandbox that held its name is deleted", func() {
		first := ct.NewSandbox(ns, "holder", "handover-1", "redis")
		Expect(k8sClient.Create(ctx, first)).To(Succeed())
		ct.WaitReady(first)
		second := ct.NewSandbox(ct.NewNamespace(), "waiter", "handover-1", "redis")
		Expect(k8sClient.Create(ctx, second)).To(Succeed())
		Eventually(ct.Condition(second, sandboxv1.ConditionStalled)).Should(Equal("True/NameConflict"))
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(ct.Condition(second, sandboxv1.ConditionReady), 10*time.Second).Should(Equal("True/Ready"))
	})

	It("resumes within seconds once a foreign Secret holding its Secret's name is deleted", func() {
		foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secretheld-sandbox"},
			StringData: map[string]string{"note": "not the controller's"}}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		sb := ct.NewSandbox(ns, "secretheld", "secretheld-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/SecretConflict"))
		Expect(k8sClient.Delete(ctx, foreign)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 10*time.Second).Should(Equal("True/Ready"))
	})
})
