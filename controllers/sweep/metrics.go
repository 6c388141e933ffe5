package sweep

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// sweepMetrics count what the orphan sweep removes, its errors and its time.
var sweepMetrics = struct {
	orphansReaped *prometheus.CounterVec
	sweepErrors   *prometheus.CounterVec
	sweepSeconds  prometheus.Histogram
}{
	orphansReaped: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbox_orphans_reaped_total",
		Help: "Containers removed by the orphan sweep, by kind: uid (its Sandbox is gone) or legacy (upstream's labels only, owner gone).",
	}, []string{"kind"}),
	sweepErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbox_sweep_errors_total",
		Help: "Orphan sweep passes that removed nothing (or not everything) because of an error, by stage.",
	}, []string{"stage"}),
	sweepSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sandbox_sweep_duration_seconds",
		Help:    "Duration of orphan sweep passes, removals included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
	}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(sweepMetrics.orphansReaped, sweepMetrics.sweepErrors, sweepMetrics.sweepSeconds)
	for _, kind := range []string{orphanUID, orphanLegacy} {
		sweepMetrics.orphansReaped.WithLabelValues(kind)
	}
}
