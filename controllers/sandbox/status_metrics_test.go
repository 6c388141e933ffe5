package sandbox_test

import (
	"fmt"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// What a dashboard scrapes of each Sandbox, through the manager's own registry.
var _ = Describe("Per-Sandbox metrics", func() {
	It("report each condition of each Sandbox with its status and reason, and drop them when the Sandbox goes", func() {
		host := ct.NewHost()
		ns := ct.NewNamespace()
		ct.StartManager(host, ct.TestOptions())
		sb := ct.NewSandbox(ns, "metrics", "metrics-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		Eventually(func() []string { return conditionSeries(ns, "metrics") }).Should(And(
			ContainElement("Ready=True/Ready agent=metrics-1"),
			ContainElement("ServicesReady=True/Ready agent=metrics-1"),
			ContainElement("OwnerAlive=True/NoOwner agent=metrics-1"),
		))
		Expect(conditionSeries(ns, "metrics")).To(HaveLen(len(ct.Get(sb).Status.Conditions)), "one series per condition type")

		Expect(k8sClient.Delete(ctx, sb)).To(Succeed())
		Eventually(ct.Gone(sb)).Should(BeTrue())
		Eventually(func() []string { return conditionSeries(ns, "metrics") }).Should(BeEmpty())
	})
})

// conditionSeries lists sandbox_status_condition for one Sandbox as
// "Type=Status/Reason agent=ID", and checks each has its transition time.
func conditionSeries(ns, name string) []string {
	mfs, _ := ctrlmetrics.Registry.Gather() // a stopped manager's collector may fail; ours do not
	var out []string
	stamped := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["namespace"] != ns || l["name"] != name {
				continue
			}
			key := fmt.Sprintf("%s=%s/%s agent=%s", l["type"], l["status"], l["reason"], l["agent"])
			switch mf.GetName() {
			case "sandbox_status_condition":
				out = append(out, key)
			case "sandbox_status_condition_last_transition_timestamp_seconds":
				stamped[key] = m.GetGauge().GetValue() > 0
			}
		}
	}
	for _, k := range out {
		ExpectWithOffset(1, stamped[k]).To(BeTrue(), "%s has no last transition time", k)
	}
	sort.Strings(out)
	return out
}
