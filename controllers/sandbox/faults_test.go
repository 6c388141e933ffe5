package controllers_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// Each fault ends in the documented condition, and the Sandbox recovers when the
// fault clears, with no help from outside.
var _ = Describe("Faults", func() {
	var (
		host *engineSim
		ns   string
	)
	start := func(opts ...fake.Option) {
		host = newHost(opts...)
		ns = newNamespace()
		startManager(host, testOptions())
	}

	It("reports a failed pull with the registry's message, and recovers once the image exists", func() {
		start()
		sb := newSandbox(ns, "pullfail", "pullfail-1", "postgres")
		clear := host.Inject(fake.Fault{Verb: fake.VerbPullImage, Ref: "postgres:16-alpine",
			Err: dd.NewError("pull", "postgres:16-alpine", dd.ErrPullFailed, errString("manifest for postgres:16-alpine not found: manifest unknown"))})
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionImagesReady)).Should(Equal("False/PullFailed"))
		c := conditionOf(sb, sandboxv1.ConditionImagesReady)
		Expect(c.Message).To(ContainSubstring("manifest for postgres:16-alpine not found: manifest unknown"))
		Expect(c.Message).To(ContainSubstring("retrying in"))
		Expect(condition(sb, sandboxv1.ConditionReady)()).To(Equal("False/Failed"))
		Expect(condition(sb, sandboxv1.ConditionReconciling)()).To(Equal("True/PullFailed"))
		Expect(condition(sb, sandboxv1.ConditionStalled)()).To(BeEmpty(), "a retry can fix a pull")
		Eventually(eventReasons(sb)).Should(ContainElement("PullFailed"))
		clear()
		waitReady(sb)
	})

	It("reports a pull that times out, and recovers when the registry answers", func() {
		start(fake.WithPullTimeout(300 * time.Millisecond))
		release := host.HoldPull("redis:8-alpine")
		sb := newSandbox(ns, "pulltimeout", "pulltimeout-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionImagesReady)).Should(Equal("False/PullFailed"))
		Expect(conditionOf(sb, sandboxv1.ConditionImagesReady).Message).To(ContainSubstring("timeout"))
		release()
		waitReady(sb)
	})

	It("reports a container that exits during start with its exit code and last log lines, then recreates it", func() {
		start()
		clear := host.crashOnStart("postgres:16-alpine", 3, "FATAL:  could not create lock file")
		sb := newSandbox(ns, "crash", "crash-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionContainersRunning)).Should(Equal("False/Exited"))
		msg := conditionOf(sb, sandboxv1.ConditionContainersRunning).Message
		Expect(msg).To(ContainSubstring("exited with code 3"))
		Expect(msg).To(ContainSubstring("FATAL: could not create lock file"))
		Expect(conditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("exited with code 3"))
		clear()
		got := waitReady(sb)
		Expect(got.Status.Services[0].Restarts).To(BeNumerically(">=", 1))
		Expect(containersOf(host, sb)).To(HaveLen(1))
	})

	It("reports a crash whose log is long in a Warning event, cut to what events.k8s.io accepts", func() {
		start()
		clear := host.crashOnStart("postgres:16-alpine", 3, "FATAL:  "+strings.Repeat("the disk is full ", 120))
		defer clear()
		sb := newSandbox(ns, "longcrash", "longcrash-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionContainersRunning)).Should(Equal("False/Exited"))
		Eventually(eventReasons(sb)).Should(ContainElement(sandboxv1.ReasonExited))
	})

	It("times a probe out after the engine's deadline, and recovers when the service answers", func() {
		start()
		clear := host.OnExec(fake.ExecRule{Result: dd.ExecResult{ExitCode: 2, Stderr: "psql: error: connection refused"}})
		sb := newSandbox(ns, "probe", "probe-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		// Probing also covers the wait for the image: wait for the probe's own words.
		Eventually(func() string {
			c := meta.FindStatusCondition(get(sb).Status.Conditions, sandboxv1.ConditionServicesReady)
			if c == nil {
				return ""
			}
			return c.Reason + ": " + c.Message
		}).Should(And(HavePrefix("Probing: "), ContainSubstring("connection refused")))
		Eventually(condition(sb, sandboxv1.ConditionServicesReady)).Should(Equal("False/ProbeTimeout"))
		Expect(conditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(ContainSubstring("did not answer within 3s"))
		clear()
		Eventually(condition(sb, sandboxv1.ConditionReady), 30*time.Second).Should(Equal("True/Ready"))
	})

	It("never quotes a password in a condition, even when a tool prints it", func() {
		start()
		host.mu.Lock()
		host.leak = true
		host.mu.Unlock()
		sb := newSandbox(ns, "leak", "leak-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(func() string {
			if c := meta.FindStatusCondition(get(sb).Status.Conditions, sandboxv1.ConditionServicesReady); c != nil {
				return c.Message
			}
			return ""
		}).Should(ContainSubstring("odd tool quoting its password <redacted>"))
		Expect(toJSON(get(sb).Status)).NotTo(ContainSubstring(secretOf(sb)["ROBOCO_TEST_DB_PASSWORD"]))
	})

	It("names the features missing after activation, and recovers when they appear", func() {
		start()
		clear := host.breakExtension("postgis")
		sb := newSandbox(ns, "feature", "feature-1")
		sb.Spec.Services = []sandboxv1.ServiceSpec{{Engine: "postgres", Features: []sandboxv1.Feature{"vector", "postgis"}}}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionServicesReady)).Should(Equal("False/FeatureVerifyFailed"))
		Expect(conditionOf(sb, sandboxv1.ConditionServicesReady).Message).To(ContainSubstring("features missing after activation: postgis"))
		clear()
		got := waitReady(sb)
		Expect(got.Status.Services[0].Features).To(ConsistOf(sandboxv1.Feature("vector"), sandboxv1.Feature("postgis")))
	})

	It("says Docker is unavailable, and recovers when it is back", func() {
		start()
		sb := newSandbox(ns, "docker", "docker-1", "redis")
		clear := host.Inject(fake.Fault{Err: dd.ErrUnavailable})
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady)).Should(Equal("False/DockerUnavailable"))
		Expect(conditionOf(sb, sandboxv1.ConditionReady).Message).To(ContainSubstring("docker unavailable"))
		clear()
		waitReady(sb)
	})

	It("stalls on memory above the operator's maximum, naming the maximum", func() {
		start()
		sb := newSandbox(ns, "toobig", "toobig-1", "postgres")
		big := resource.MustParse("64Gi")
		sb.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: &big}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionStalled)).Should(Equal("True/InvalidSpec"))
		Expect(conditionOf(sb, sandboxv1.ConditionStalled).Message).To(ContainSubstring("the most allowed is 4Gi"))
		Expect(containersOf(host, sb)).To(BeEmpty())
		By("recovering when the spec is fixed")
		fixed := get(sb)
		small := resource.MustParse("256Mi")
		fixed.Spec.Services[0].Resources.Memory = &small
		Expect(k8sClient.Update(ctx, fixed)).To(Succeed())
		waitReady(sb)
	})
})

type errString string

func (e errString) Error() string { return string(e) }
