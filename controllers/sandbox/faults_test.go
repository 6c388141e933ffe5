package sandbox_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// Each fault ends in the documented condition, and the Sandbox recovers when the
// fault clears, with no help from outside.
var _ = Describe("Faults", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	start := func(opts ...fake.Option) {
		host = ct.NewHost(opts...)
		ns = ct.NewNamespace()
		ct.StartManager(host, ct.TestOptions())
	}

	It("reports a failed pull with the registry's message, and recovers once the image exists", func() {
		start()
		sb := ct.NewSandbox(ns, "pullfail", "pullfail-1", "postgres")
		clear := host.Inject(fake.Fault{Verb: fake.VerbPullImage, Ref: "postgres:16-alpine",
			Err: dd.NewError("pull", "postgres:16-alpine", dd.ErrPullFailed, ct.ErrString("manifest for postgres:16-alpine not found: manifest unknown"))})
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionImagesReady)).Should(Equal("False/PullFailed"))
		c := ct.ConditionOf(sb, sandboxv1.ConditionImagesReady)
		Expect(c.Message).To(ContainSubstring("manifest for postgres:16-alpine not found: manifest unknown"))
		Expect(c.Message).To(ContainSubstring("retrying in"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("False/Failed"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/PullFailed"))
		Expect(ct.Condition(sb, sandboxv1.ConditionStalled)()).To(BeEmpty(), "a retry can fix a pull")
		Eventually(ct.EventReasons(sb)).Should(ContainElement("PullFailed"))
		clear()
		ct.WaitReady(sb)
	})

	It("reports a pull that times out, and recovers when the registry answers", func() {
		start(fake.WithPullTimeout(300 * time.Millisecond))
		release := host.HoldPull("redis:8-alpine")
		sb := ct.NewSandbox(ns, "pulltimeout", "pulltimeout-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionImagesReady)).Should(Equal("False/PullFailed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionImagesReady).Message).To(ContainSubstring("timeout"))
		release()
		ct.WaitReady(sb)
	})

	It("reports a container that exits during start with its exit code and last log lines, then recreates it", func() {
		start()
		clear := host.CrashOnStart("postgres:16-alpine", 3, "FATAL:  could not create lock file")
		sb := ct.NewSandbox(ns, "crash", "crash-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionContainersRunning)).Should(Equal("False/Exited"))
		msg := ct.ConditionOf(sb, sandboxv1.ConditionContainersRunning).Message
		Expect(msg).To(ContainSubstring("exited with code 3"))
		Expect(msg).To(ContainSubstring("FATAL: could not create lock file"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("exited with code 3"))
		clear()
		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].Restarts).To(BeNumerically(">=", 1))
		Expect(ct.ContainersOf(host, sb)).To(HaveLen(1))
	})

	It("reports a crash whose log is long in a Warning event, cut to what events.k8s.io accepts", func() {
		start()
		clear := host.CrashOnStart("postgres:16-alpine", 3, "FATAL:  "+strings.Repeat("the disk is full ", 120))
		defer clear()
		sb := ct.NewSandbox(ns, "longcrash", "longcrash-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionContainersRunning)).Should(Equal("False/Exited"))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.ReasonExited))
	})

	It("times a probe out after the engine's deadline, and recovers when the service answers", func() {
		start()
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 2, Stderr: "psql: error: connection refused"}})
		sb := ct.NewSandbox(ns, "probe", "probe-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		// Probing also covers the wait for the image: wait for the probe's own words.
		Eventually(func() string {
			c := meta.FindStatusCondition(ct.Get(sb).Status.Conditions, sandboxv1.ConditionServicesReady)
			if c == nil {
				return ""
			}
			return c.Reason + ": " + c.Message
		}).Should(And(HavePrefix("Probing: "), ContainSubstring("connection refused")))
		Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady)).Should(Equal("False/ProbeTimeout"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(ContainSubstring("did not answer within 3s"))
		clear()
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 30*time.Second).Should(Equal("True/Ready"))
	})

	It("never quotes a password in a condition, even when a tool prints it", func() {
		start()
		host.LeakPasswords()
		sb := ct.NewSandbox(ns, "leak", "leak-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() string {
			if c := meta.FindStatusCondition(ct.Get(sb).Status.Conditions, sandboxv1.ConditionServicesReady); c != nil {
				return c.Message
			}
			return ""
		}).Should(ContainSubstring("odd tool quoting its password <redacted>"))
		Expect(ct.ToJSON(ct.Get(sb).Status)).NotTo(ContainSubstring(ct.SecretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]))
	})

	It("names the features missing after activation, and recovers when they appear", func() {
		start()
		clear := host.BreakExtension("postgis")
		sb := ct.NewSandbox(ns, "feature", "feature-1")
		sb.Spec.Services = []sandboxv1.ServiceSpec{{Engine: "postgres", Features: []sandboxv1.Feature{"vector", "postgis"}}}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionServicesReady)).Should(Equal("False/FeatureVerifyFailed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(ContainSubstring("features missing after activation: postgis"))
		clear()
		got := ct.WaitReady(sb)
		Expect(got.Status.Services[0].Features).To(ConsistOf(sandboxv1.Feature("vector"), sandboxv1.Feature("postgis")))
	})

	It("says Docker is unavailable, and recovers when it is back", func() {
		start()
		sb := ct.NewSandbox(ns, "docker", "docker-1", "redis")
		clear := host.Inject(fake.Fault{Err: dd.ErrUnavailable})
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerUnavailable"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("docker unavailable"))
		clear()
		ct.WaitReady(sb)
	})

	It("stalls on memory above the operator's maximum, naming the maximum", func() {
		start()
		sb := ct.NewSandbox(ns, "toobig", "toobig-1", "postgres")
		big := resource.MustParse("64Gi")
		sb.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: &big}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("the most allowed is 4Gi"))
		Expect(ct.ContainersOf(host, sb)).To(BeEmpty())
		By("recovering when the spec is fixed")
		fixed := ct.Get(sb)
		small := resource.MustParse("256Mi")
		fixed.Spec.Services[0].Resources.Memory = &small
		Expect(k8sClient.Update(ctx, fixed)).To(Succeed())
		ct.WaitReady(sb)
	})
})
