package sandbox_test

import (
	"fmt"
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

// redisIn runs redis-cli in the container, as the published user (its
// password read from the server's own configuration file).
func redisIn(driver dd.Driver, id string, args ...string) string {
	script := `REDISCLI_AUTH=$(sed -n 's/^requirepass //p' ` + engine.SecretsDir + `redis.conf) redis-cli --no-auth-warning --raw "$@"`
	r, err := driver.Exec(ctx, id, dd.ExecSpec{Cmd: append([]string{"sh", "-c", script, "redis"}, args...)})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, r.ExitCode).To(BeZero(), r.Stderr)
	return strings.TrimSpace(r.Stdout)
}

// psqlOn runs one query as the published user in its database.
func psqlOn(driver dd.Driver, id, query string) string {
	r, err := driver.Exec(ctx, id, dd.ExecSpec{Cmd: []string{"psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-U", "sandbox", "-d", "sandbox", "-c", query}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, r.ExitCode).To(BeZero(), r.Stderr)
	return strings.TrimSpace(r.Stdout)
}

var _ = Describe("Named checkpoints on the real Docker engine", Label("docker"), func() {
	var (
		driver dd.Driver
		ns     string
		sb     *sandboxv1.Sandbox
		ids    map[sandboxv1.Engine]string
	)
	// write makes n the data of both services; read answers "pg/redis".
	write := func(n int) {
		psqlOn(driver, ids["postgres"], fmt.Sprintf("CREATE TABLE IF NOT EXISTS t (n int); DELETE FROM t; INSERT INTO t VALUES (%d);", n))
		redisIn(driver, ids["redis"], "SET", "n", fmt.Sprint(n))
	}
	read := func() string {
		return psqlOn(driver, ids["postgres"], "SELECT coalesce((SELECT max(n) FROM t), -1);") + "/" + redisIn(driver, ids["redis"], "GET", "n")
	}
	ask := func(id string, action sandboxv1.DataAction, name, phase string) {
		GinkgoHelper()
		requestNamed(sb, id, action, name)
		Eventually(dataPhase(sb), 2*time.Minute, 100*time.Millisecond).Should(Equal(id + "/" + phase))
	}

	BeforeEach(func() {
		rd := ct.NewRealDocker()
		d, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(d.Close)
		driver = d
		img, err := testenv.EngineImages()
		Expect(err).NotTo(HaveOccurred())
		opts := ct.RealOptions(rd, time.Minute)
		opts.Images["postgres"] = engine.Images{Default: img.Plain["postgres"]}
		opts.CheckpointsRelist = time.Second
		ct.StartManager(driver, opts)
		ns = ct.NewNamespace()
		sb = ct.NewSandbox(ns, "ckpt", "ckpt-"+rd.RunID, "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 3*time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
		ids = idsOf(sb)
	})

	It("keeps 32 by name, each restorable, refuses a 33rd naming the limit, deletes one, and reports one an agent dropped", func() {
		for i := range 32 {
			write(i)
			ask(fmt.Sprintf("c%d", i), sandboxv1.DataCheckpoint, fmt.Sprintf("n%d", i), "Succeeded")
		}
		Expect(checkpointsOf(sb)()).To(HaveLen(32))
		Expect(checkpointsOf(sb)()).To(ContainElement("n7:[postgres redis]"))
		ask("c32", sandboxv1.DataCheckpoint, "n32", "Failed")
		Expect(ct.Get(sb).Status.Data.Message).To(ContainSubstring("keeps at most 32 checkpoints"))
		Expect(checkpointsOf(sb)()).To(HaveLen(32))

		for _, i := range []int{31, 0, 17, 5} {
			ask(fmt.Sprintf("r%d", i), sandboxv1.DataRestore, fmt.Sprintf("n%d", i), "Succeeded")
			Expect(read()).To(Equal(fmt.Sprintf("%d/%d", i, i)))
		}
		ask("latest", sandboxv1.DataRestore, "", "Failed")
		Expect(ct.Get(sb).Status.Data.Message).To(ContainSubstring("no checkpoint named latest"))

		By("a deleted checkpoint is gone, and makes room for another")
		ask("d0", sandboxv1.DataDeleteCheckpoint, "n0", "Succeeded")
		Expect(checkpointsOf(sb)()).To(HaveLen(31))
		Expect(checkpointsOf(sb)()).NotTo(ContainElement(HavePrefix("n0:")))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventCheckpointDeleted))
		ask("r0", sandboxv1.DataRestore, "n0", "Failed")
		ask("c-after", sandboxv1.DataCheckpoint, "after", "Succeeded")

		By("one the agent dropped is reported lost at the next listing")
		psqlIn(driver, ids["postgres"], "DROP DATABASE _sandbox_ckpt_n1")
		// Note: by the deletion's listing; the minute's listing alone did not
		// end within a minute beside a build here (an open bug, see the notes).
		ask("d-after", sandboxv1.DataDeleteCheckpoint, "after", "Succeeded")
		Expect(checkpointsOf(sb)()).To(ContainElement("n1:[redis]"))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventCheckpointsLost))
		Expect(idsOf(sb)).To(Equal(ids), "the containers were replaced")
	})

	It("restores a checkpoint taken before names as latest, and deletes it", func() {
		write(7)
		// What a release before names did for a Checkpoint.
		psqlIn(driver, ids["postgres"], "CREATE DATABASE _sandbox_checkpoint TEMPLATE sandbox STRATEGY FILE_COPY")
		psqlIn(driver, ids["postgres"], "ALTER DATABASE _sandbox_checkpoint ALLOW_CONNECTIONS false")
		redisIn(driver, ids["redis"], "CONFIG", "SET", "dbfilename", "sandbox-checkpoint.rdb")
		redisIn(driver, ids["redis"], "SAVE")
		redisIn(driver, ids["redis"], "CONFIG", "SET", "dbfilename", "dump.rdb")
		write(8)
		ask("r1", sandboxv1.DataRestore, "", "Succeeded")
		Expect(read()).To(Equal("7/7"))
		ask("list", sandboxv1.DataCheckpoint, "other", "Succeeded")
		Expect(checkpointsOf(sb)()).To(ConsistOf("latest:[postgres redis]", "other:[postgres redis]"))
		ask("d1", sandboxv1.DataDeleteCheckpoint, "", "Succeeded")
		Expect(checkpointsOf(sb)()).To(ConsistOf("other:[postgres redis]"))
		ask("r2", sandboxv1.DataRestore, "latest", "Failed")
	})
})
