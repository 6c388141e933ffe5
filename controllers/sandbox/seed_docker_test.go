package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// startWithin bounds a postgres container's way to Seeding on a loaded
// machine: the image's init runs a server, stops it and starts it again.
const startWithin = 3 * time.Minute

// Issue 39: a seed runs beside the passes, in its container; deleting the
// Sandbox stops it with the container, whatever is left of it.
var _ = Describe("Seeds on the real Docker engine", Label("docker"), func() {
	var (
		rd     *ct.RealDocker
		driver dd.Driver
		ns     string
	)
	BeforeEach(func() {
		rd = ct.NewRealDocker()
		real, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(real.Close)
		driver = real
		ns = ct.NewNamespace()
	})

	It("deletes a Sandbox in the middle of a 5 × 55 s seed at once: its container and the seed's processes go, a neighbour's seed runs on", func() {
		ct.StartManager(driver, ct.WithPostgres(ct.RealOptions(rd, time.Minute)))
		ct.SeedConfigMap(ns, "slow", ct.SleepScripts(5, 55))
		doomed := ct.Seeded(ct.NewSandbox(ns, "doomed", "doomed-"+rd.RunID, "postgres"), "slow")
		neighbour := ct.Seeded(ct.NewSandbox(ns, "neighbour", "neighbour-"+rd.RunID, "postgres"), "slow")
		Expect(k8sClient.Create(ctx, doomed)).To(Succeed())
		Expect(k8sClient.Create(ctx, neighbour)).To(Succeed())

		By("both seeding: the status names the script, postgres runs it")
		for _, sb := range []*sandboxv1.Sandbox{doomed, neighbour} {
			Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady), startWithin, 200*time.Millisecond).Should(Equal("False/Seeding"))
			// Note: "starting 5 scripts" comes first, until the seed's first progress line.
			Eventually(func() string { return ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message }, time.Minute).Should(
				MatchRegexp(`Seeding: 1 of 5 scripts, 010-sleep\.sql running`))
			Eventually(ct.SleepingBackends(driver, sb), time.Minute).Should(Equal(1))
		}
		id, uid := ct.ContainerOf(doomed), string(ct.Get(doomed).UID)
		other := ct.ContainerOf(neighbour)
		Expect(ct.HostProcessesMatching(id, "psql")()).NotTo(BeEmpty(), "the seed's psql is not seen from this host's /proc")
		before, err := driver.Inspect(ctx, other)
		Expect(err).NotTo(HaveOccurred())

		By("deleting one mid-seed")
		ct.DeletedGoes(doomed)
		Eventually(func() []string { return rd.List(map[string]string{shost.LabelUID: uid}) }).Should(BeEmpty())
		Eventually(func() []string { return ct.HostProcesses(id) }).Should(BeEmpty(), "processes of the removed container run on")

		By("the neighbour untouched: the same container, started once, its seed running")
		after, err := driver.Inspect(ctx, other)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.State).To(Equal(dd.StateRunning))
		Expect(after.StartedAt).To(Equal(before.StartedAt))
		Expect(ct.ContainerOf(neighbour)).To(Equal(other))
		Expect(ct.HostProcessesMatching(other, "psql")()).NotTo(BeEmpty())
		Expect(ct.SleepingBackends(driver, neighbour)()).To(Equal(1))
		Expect(ct.Condition(neighbour, sandboxv1.ConditionServicesReady)()).To(Equal("False/Seeding"))

		ct.DeletedGoes(neighbour)
		Eventually(func() []string { return ct.HostProcesses(other) }).Should(BeEmpty())
	})

	It("finds a seed its stopped manager left running, awaits it and never runs it again: the row it inserted is there once", func() {
		opts := ct.WithPostgres(ct.RealOptions(rd, time.Minute))
		stop := ct.StartManager(driver, opts)
		ct.SeedConfigMap(ns, "rows", map[string]string{
			"10-schema.sql": "CREATE TABLE t (id int);",
			"20-rows.sql":   "INSERT INTO t VALUES (1); SELECT pg_sleep(20);",
		})
		sb := ct.Seeded(ct.NewSandbox(ns, "rows", "rows-"+rd.RunID, "postgres"), "rows")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		running := MatchRegexp(`Seeding: 2 of 2 scripts, 20-rows\.sql running`)
		message := func() string {
			return ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Reason + ": " +
				ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message
		}

		By("the row inserted, the script still running")
		Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady), startWithin, 200*time.Millisecond).Should(Equal("False/Seeding"))
		Eventually(func() (string, error) { return ct.Psql(driver, sb, "SELECT count(*) FROM t") }, time.Minute).Should(Equal("1"))
		Expect(ct.SleepingBackends(driver, sb)()).To(Equal(1))
		Eventually(message).Should(running)
		id := ct.ContainerOf(sb)

		By("stopping the manager mid-seed, then starting another")
		stop()
		left := message()
		again, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(again.Close)
		ct.StartManager(again, opts)
		Eventually(message, time.Minute).Should(And(running, Not(Equal(left))), "the new manager did not find the seed running")

		By("Ready once the seed ends, on the same container, the row there once")
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
		Expect(ct.ContainerOf(sb)).To(Equal(id), "the container was made again")
		Expect(ct.Psql(again, sb, "SELECT count(*) FROM t")).To(Equal("1"))
		ct.DeletedGoes(sb)
	})
})
