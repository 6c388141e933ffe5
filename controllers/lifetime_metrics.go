package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// lifetimeMetrics count what ends Sandboxes and their containers other than a
// user's delete: owners gone and orphan sweeps.
var lifetimeMetrics = struct {
	ownerGoneDeletions prometheus.Counter
	orphansReaped      *prometheus.CounterVec
	sweepErrors        *prometheus.CounterVec
	sweepSeconds       prometheus.Histogram
}{
	ownerGoneDeletions: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sandbox_owner_gone_deletions_total",
		Help: "Sandboxes deleted because their owner container was gone for the grace period.",
	}),
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
	ctrlmetrics.Registry.MustRegister(lifetimeMetrics.ownerGoneDeletions, lifetimeMetrics.orphansReaped,
		lifetimeMetrics.sweepErrors, lifetimeMetrics.sweepSeconds)
	for _, kind := range []string{orphanUID, orphanLegacy} {
		lifetimeMetrics.orphansReaped.WithLabelValues(kind)
	}
}
