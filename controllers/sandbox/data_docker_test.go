package sandbox_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// psqlIn runs one query as the published user over the container's unix
// socket (trusted by the image) and returns its unaligned output.
func psqlIn(driver dd.Driver, id, query string) string {
	r, err := driver.Exec(ctx, id, dd.ExecSpec{Cmd: []string{"psql", "-X", "-q", "-tA", "-U", "sandbox", "-d", "postgres", "-c", query}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, r.ExitCode).To(BeZero(), r.Stderr)
	return strings.TrimSpace(r.Stdout)
}

// processesIn counts the container's processes whose command line has s
// (the engine images have no ps; the listing's own shell is left out).
func processesIn(driver dd.Driver, id, s string) func() int {
	return func() int {
		r, err := driver.Exec(ctx, id, dd.ExecSpec{Cmd: []string{"sh", "-c", `for p in /proc/[0-9]*; do tr '\0\n' '  ' < "$p/cmdline" 2>/dev/null; echo; done`}, OutputLimit: 4 << 20})
		if err != nil {
			return -1
		}
		n := 0
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.Contains(l, s) && !strings.Contains(l, "/proc/") {
				n++
			}
		}
		return n
	}
}

var _ = Describe("Data requests on the real Docker engine", Label("docker"), func() {
	It("cancels a restore stuck on an agent's lock when a new request comes: its processes and its backend go, and the new one runs once the lock is free", func() {
		rd := ct.NewRealDocker()
		driver, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(driver.Close)
		img, err := testenv.EngineImages()
		Expect(err).NotTo(HaveOccurred())
		opts := ct.RealOptions(rd, time.Minute)
		opts.Images["postgres"] = engine.Images{Default: img.Plain["postgres"]}
		ct.StartManager(driver, opts)
		ns := ct.NewNamespace()
		sb := ct.NewSandbox(ns, "stuck", "stuck-"+rd.RunID, "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 3*time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
		id := serviceStatus(sb, sandboxv1.EnginePostgres).ContainerID
		requestData(sb, "c1", sandboxv1.DataCheckpoint)
		Eventually(dataPhase(sb), time.Minute, 100*time.Millisecond).Should(Equal("c1/Succeeded"))

		By("an agent's session holding the database's row in pg_database, in a transaction left open")
		_, err = driver.ExecDetached(ctx, id, dd.ExecSpec{Cmd: []string{"psql", "-X", "-q", "-U", "sandbox", "-d", "sandbox",
			"-c", "SET application_name = 'agent'", "-c", "BEGIN", "-c", "ALTER DATABASE sandbox CONNECTION LIMIT -1", "-c", "SELECT pg_sleep(600)"}})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			return psqlIn(driver, id, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'agent' AND wait_event = 'PgSleep'")
		}, time.Minute, 100*time.Millisecond).Should(Equal("1"))

		By("a restore, which waits for that lock")
		requestData(sb, "r1", sandboxv1.DataRestore)
		waiting := "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name NOT LIKE '%z2%'"
		Eventually(func() string { return psqlIn(driver, id, waiting) }, time.Minute, 100*time.Millisecond).Should(Equal("1"))
		Eventually(dataPhase(sb), time.Minute, 100*time.Millisecond).Should(Equal("r1/Running"))

		By("a new request: the restore's processes and its backend go")
		requestData(sb, "z2", sandboxv1.DataReset)
		Eventually(processesIn(driver, id, "op=restore"), time.Minute, 200*time.Millisecond).Should(BeZero(),
			"the stuck restore's psql still runs")
		Eventually(func() string { return psqlIn(driver, id, waiting) }, time.Minute, 200*time.Millisecond).Should(Equal("0"),
			"the stuck restore's backend still waits for the lock")

		By("the agent's session ends: the new request runs, and the database takes connections")
		psqlIn(driver, id, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'agent'")
		Eventually(dataPhase(sb), time.Minute, 100*time.Millisecond).Should(Equal("z2/Succeeded"))
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		r, err := driver.Exec(cctx, id, dd.ExecSpec{Cmd: []string{"psql", "-X", "-tA", "-U", "sandbox", "-d", "sandbox", "-c", "SELECT datallowconn FROM pg_database WHERE datname = 'sandbox'"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(r.Stdout)).To(Equal("t"), r.Stderr)
		Expect(processesIn(driver, id, "op=")()).To(BeZero(), "a data step still runs")
	})
})
