package sandbox_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Issue 39: liveness is the workers taking work, so a long seed, which runs
// beside the passes, never fails /healthz, and the status says which script
// runs. The suite runs a short seed; SANDBOX_LONG_SEED=1 runs the issue's
// 12 × 10 s one with the stuck threshold at 5 s (about 2.5 minutes).
var _ = Describe("Liveness during a long seed on the real Docker engine", Label("docker"), func() {
	// Note: the threshold is well under the seed (a worker held by it fails)
	// and well over a pass on a loaded machine (2 s failed at a load of 60:
	// the one worker's pass took longer while the other Sandbox waited).
	It("answers /healthz 200 throughout a 6 × 8 s seed with a 15 s stuck threshold, one worker serving another Sandbox meanwhile", func() {
		seedKeepsLiveness(6, 8, 15*time.Second)
	})

	It("answers /healthz 200 throughout a 12 × 10 s seed with a 5 s stuck threshold (SANDBOX_LONG_SEED=1)", Label("long"), func() {
		if os.Getenv("SANDBOX_LONG_SEED") != "1" {
			Skip("set SANDBOX_LONG_SEED=1 for the 12 × 10 s seed (about 2.5 minutes)")
		}
		seedKeepsLiveness(12, 10, 5*time.Second)
	})
})

// seedKeepsLiveness seeds a postgres Sandbox with n scripts of secs seconds
// each, on a manager of one Sandbox worker whose /healthz fails once items wait
// stuck long with no worker taking one; it asks /healthz every 500 ms from the
// create until Ready, and creates another Sandbox mid-seed, which must be
// served meanwhile (a seed held by the worker would make it wait, and fail
// /healthz).
func seedKeepsLiveness(n, secs int, stuck time.Duration) {
	rd := ct.NewRealDocker()
	driver, err := dd.New()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(driver.Close)
	base := startProbed(driver, ct.Setup{Options: ct.WithPostgres(ct.RealOptions(rd, time.Minute)), Sweep: true,
		HostIdentitySettle: time.Millisecond, MaxConcurrentReconciles: 1, WorkersStuckAfter: stuck})
	Eventually(healthz(base, "")).Should(Equal("200 ok"))
	ns := ct.NewNamespace()
	ct.SeedConfigMap(ns, "long", ct.SleepScripts(n, secs))
	sb := ct.Seeded(ct.NewSandbox(ns, "long-seed", "long-"+rd.RunID, "postgres"), "long")

	answers := pollHealthz(base, 500*time.Millisecond)
	Expect(k8sClient.Create(ctx, sb)).To(Succeed())
	Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady), 3*time.Minute, 200*time.Millisecond).Should(Equal("False/Seeding"))

	By("another Sandbox served while the seed runs")
	other := ct.NewSandbox(ns, "other", "other-"+rd.RunID, "redis")
	Expect(k8sClient.Create(ctx, other)).To(Succeed())
	Eventually(ct.Condition(other, sandboxv1.ConditionReady), time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
	Expect(ct.Condition(sb, sandboxv1.ConditionServicesReady)()).To(Equal("False/Seeding"), "the seed ended before the other was served")

	By("the status naming the script that runs, until Ready")
	progress := regexp.MustCompile(`Seeding: (\d+) of ` + strconv.Itoa(n) + ` scripts, (\S+) running`)
	scripts := map[int]bool{}
	Eventually(func() string {
		got := ct.Get(sb)
		// Note: before the seed names its first script, the status says it starts them.
		if c := meta.FindStatusCondition(got.Status.Conditions, sandboxv1.ConditionServicesReady); c != nil && c.Reason == sandboxv1.ReasonSeeding &&
			!strings.Contains(c.Message, "Seeding: starting "+strconv.Itoa(n)+" scripts") {
			m := progress.FindStringSubmatch(c.Message)
			Expect(m).NotTo(BeNil(), "Seeding says %q", c.Message)
			i, _ := strconv.Atoi(m[1])
			Expect(m[2]).To(Equal(ct.SleepScript(i)), "Seeding says %q", c.Message)
			scripts[i] = true
		}
		return ct.Condition(sb, sandboxv1.ConditionReady)()
	}, time.Duration(n*secs)*time.Second+2*time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
	seen := answers()
	GinkgoWriter.Printf("/healthz asked %d times during the seed; scripts the status named: %v\n", len(seen), scripts)
	Expect(len(scripts)).To(BeNumerically(">=", 2), "the status never moved past one script")
	Expect(len(seen)).To(BeNumerically(">=", n*secs), "/healthz asked too seldom")
	for _, a := range seen {
		Expect(a).To(Equal("200 ok"))
	}
	ct.DeletedGoes(sb)
}

// pollHealthz asks the probe at base every interval until the returned func
// is called, which answers what it said each time.
func pollHealthz(base string, interval time.Duration) (stop func() []string) {
	var (
		mu      sync.Mutex
		answers []string
	)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(ended)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				a := healthz(base, "")()
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	stop = func() []string {
		once.Do(func() { close(done); <-ended })
		mu.Lock()
		defer mu.Unlock()
		return answers
	}
	DeferCleanup(func() { stop() })
	return stop
}
