package sandbox_test

import (
	"fmt"
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

// sleepScripts are n scripts of one pg_sleep(secs) each, 10-sleep.sql onwards.
func sleepScripts(n, secs int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("%02d-sleep.sql", 10*(i+1))] = fmt.Sprintf("SELECT pg_sleep(%d);", secs)
	}
	return out
}

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
		ct.SeedConfigMap(ns, "slow", sleepScripts(5, 55))
		doomed := ct.Seeded(ct.NewSandbox(ns, "doomed", "doomed-"+rd.RunID, "postgres"), "slow")
		neighbour := ct.Seeded(ct.NewSandbox(ns, "neighbour", "neighbour-"+rd.RunID, "postgres"), "slow")
		Expect(k8sClient.Create(ctx, doomed)).To(Succeed())
		Expect(k8sClient.Create(ctx, neighbour)).To(Succeed())

		By("both seeding: the status names the script, postgres runs it")
		for _, sb := range []*sandboxv1.Sandbox{doomed, neighbour} {
			Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady), startWithin, 200*time.Millisecond).Should(Equal("False/Seeding"))
			Expect(ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(
				MatchRegexp(`Seeding postgres: 1 of 5 scripts, 10-sleep\.sql running`))
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
})
