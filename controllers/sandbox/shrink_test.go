package sandbox_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// A shrink gives its room back only once what it dropped is gone: until then
// the quota counts what still runs, and nothing else is admitted into it
// (found by the tenant chaos run: a dropped 512Mi service, still running,
// no longer counted, while another Sandbox was admitted in its place).
var _ = Describe("Shrink", func() {
	It("counts a dropped service at its memory until its container is gone", func() {
		ns := ct.NewNamespace()
		host := ct.NewHost()
		ct.StartManager(host, ct.TestOptions())
		q := ct.NewQuota(ns, sandboxv1.QuotaAmounts{Memory: ptr.To(resource.MustParse("1Gi"))})
		sb := ct.NewSandbox(ns, "shrinks", "shrinks-"+ns, "redis", "postgres")
		sb.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("128Mi"))}
		sb.Spec.Services[1].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("512Mi"))}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Eventually(ct.QuotaSummary(q)).Should(Equal("memory 640Mi/1Gi"))

		postgres, _ := engine.Lookup("postgres")
		clear := host.Inject(fake.Fault{Verb: fake.VerbRemove, Ref: engine.ContainerName(postgres, sb.Spec.AgentID),
			Err: errors.New("Error response from daemon: removal of container in progress")})
		ct.Edit(sb, func(s *sandboxv1.SandboxSpec) { s.Services = s.Services[:1] })
		Eventually(func() int { return host.Calls(fake.VerbRemove) }).Should(BeNumerically(">", 0))
		Expect(ct.ContainersOf(host, sb)).To(HaveLen(2), "the dropped postgres still runs")

		other := ct.NewSandbox(ns, "other", "other-"+ns, "redis")
		other.Spec.Services[0].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("512Mi"))}
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		overAdmitted := "another Sandbox was admitted into room a dropped service still takes"
		Eventually(ct.Condition(other, sandboxv1.ConditionReady)).Should(Equal("False/"+sandboxv1.ReasonQuotaExceeded), overAdmitted)
		Consistently(ct.QuotaSummary(q), 2*time.Second, 50*time.Millisecond).Should(Equal("memory 640Mi/1Gi"), overAdmitted)
		Expect(ct.ContainersOf(host, other)).To(BeEmpty(), overAdmitted)

		clear()
		Eventually(func() int { return len(ct.ContainersOf(host, sb)) }).Should(Equal(1))
		ct.WaitReady(other)
		Eventually(ct.QuotaSummary(q)).Should(Equal("memory 640Mi/1Gi"))
		Expect(ct.Get(sb).Status.Admitted.Memory.String()).To(Equal("128Mi"))
	})
})
