package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// poolMetrics are the warm pools' figures: hits and misses, claim latency, and
// how long a member takes from create to claimable.
var poolMetrics = struct {
	claims       *prometheus.CounterVec
	claimSeconds *prometheus.HistogramVec
	refillSecs   *prometheus.HistogramVec
}{
	claims: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbox_pool_claims_total",
		Help: "Services that looked for a warm pool member, by engine and result (hit: claimed; miss: none ready, provisioned cold).",
	}, []string{"engine", "result"}),
	claimSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbox_pool_claim_seconds",
		Help:    "Duration of a claim (record, rename, rotate), by engine.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5},
	}, []string{"engine"}),
	refillSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbox_pool_refill_seconds",
		Help:    "Time from a pool member's creation to its first passed probe, by engine.",
		Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60},
	}, []string{"engine"}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(poolMetrics.claims, poolMetrics.claimSeconds, poolMetrics.refillSecs)
}
