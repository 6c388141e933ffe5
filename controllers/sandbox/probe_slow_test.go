package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A service whose every probe takes longer than the probe's own bound (a
// loaded host: mongosh's Node.js start, beside a build, took more than 10 s
// in CI and the service never became Ready) is probed beside the pass once
// a probe outran the bound, with a longer one: it becomes Ready, and no pass
// waits on it meanwhile.
var _ = Describe("A probe slower than its bound", func() {
	It("runs beside the pass with a longer bound, and the service becomes Ready", func() {
		host := ct.NewHost()
		ns := ct.NewNamespace()
		ct.StartManagerWith(env.Config, host, ct.Setup{Options: ct.TestOptions(), HostIdentitySettle: time.Millisecond})
		// Postgres's probe (psql) is bounded at 10 s inline; this one takes 12.
		DeferCleanup(host.OnExec(fake.ExecRule{Container: "roboco-sandbox-pg-slow-1", Command: "psql", Delay: 12 * time.Second}))
		sb := ct.NewSandbox(ns, "slow", "slow-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())

		Eventually(ct.ConditionMessage(sb, sandboxv1.ConditionReady)).WithTimeout(time.Minute).Should(ContainSubstring("its probe runs beside the pass"))
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).WithTimeout(2 * time.Minute).Should(Equal("True/Ready"))
		Expect(host.StepsStarted("probe")).To(BeNumerically(">=", 1))
	})

	// A starved postgres takes seconds to fork a backend and log a client in:
	// a probe that gives up connecting long before its own bound never sees
	// it answer (CI: a 3 s connect timeout inside a 40 s probe, beside a
	// build, failed for 5 minutes).
	It("waits for a slow postgres to accept the probe's connection, inline and beside the pass", func() {
		host := ct.NewHost()
		ns := ct.NewNamespace()
		ct.StartManagerWith(env.Config, host, ct.Setup{Options: ct.TestOptions(), HostIdentitySettle: time.Millisecond})
		inline := ct.NewSandbox(ns, "accept-inline", "accept-inline-1", "postgres")
		DeferCleanup(host.SlowAccept("roboco-sandbox-pg-accept-inline-1", 5*time.Second))
		beside := ct.NewSandbox(ns, "accept-beside", "accept-beside-1", "postgres")
		DeferCleanup(host.SlowAccept("roboco-sandbox-pg-accept-beside-1", 20*time.Second))
		DeferCleanup(host.OnExec(fake.ExecRule{Container: "roboco-sandbox-pg-accept-beside-1", Command: "psql", Delay: 12 * time.Second}))
		Expect(k8sClient.Create(ctx, inline)).To(Succeed())
		Expect(k8sClient.Create(ctx, beside)).To(Succeed())

		Eventually(ct.Condition(inline, sandboxv1.ConditionReady)).WithTimeout(time.Minute).Should(Equal("True/Ready"))
		Eventually(ct.Condition(beside, sandboxv1.ConditionReady)).WithTimeout(2*time.Minute).Should(Equal("True/Ready"),
			ct.ConditionMessage(beside, sandboxv1.ConditionReady))
	})
})
