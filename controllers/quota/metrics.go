package quota

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// quotaMetrics are each SandboxQuota's used and hard amounts, by resource
// (sandboxes, poolMembers, memory in bytes); hard only for limited amounts, so
// that used/hard (the 90 % alert) exists only where a limit does.
var quotaMetrics = struct {
	used, hard *prometheus.GaugeVec
}{
	used: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandbox_quota_used",
		Help: "What a namespace's Sandboxes and pools take under a SandboxQuota, by resource (memory in bytes).",
	}, []string{"namespace", "quota", "resource"}),
	hard: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandbox_quota_hard",
		Help: "A SandboxQuota's limit, by resource (memory in bytes); absent for an amount it does not limit.",
	}, []string{"namespace", "quota", "resource"}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(quotaMetrics.used, quotaMetrics.hard)
}

// observe sets q's gauges from its status.
func observe(q *sandboxv1.SandboxQuota) {
	forgetMetrics(q.Namespace, q.Name)
	set := func(resource string, used float64, hard *float64) {
		quotaMetrics.used.WithLabelValues(q.Namespace, q.Name, resource).Set(used)
		if hard != nil {
			quotaMetrics.hard.WithLabelValues(q.Namespace, q.Name, resource).Set(*hard)
		}
	}
	u, h := q.Status.Used, q.Status.Hard
	set("sandboxes", float64(deref(u.Sandboxes)), int32Float(h.Sandboxes))
	set("poolMembers", float64(deref(u.PoolMembers)), int32Float(h.PoolMembers))
	var usedMem float64
	if u.Memory != nil {
		usedMem = float64(u.Memory.Value())
	}
	var hardMem *float64
	if h.Memory != nil {
		v := float64(h.Memory.Value())
		hardMem = &v
	}
	set("memory", usedMem, hardMem)
}

func forgetMetrics(namespace, name string) {
	labels := map[string]string{"namespace": namespace, "quota": name}
	quotaMetrics.used.DeletePartialMatch(labels)
	quotaMetrics.hard.DeletePartialMatch(labels)
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func int32Float(p *int32) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}
