package controllers

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// metrics live on controller-runtime's registry, so the manager's /metrics serves
// them next to the workqueue and client metrics.
type metrics struct {
	timeToReady   *prometheus.HistogramVec
	pullSeconds   *prometheus.HistogramVec
	probeAttempts *prometheus.CounterVec
	failures      *prometheus.CounterVec
}

var sandboxMetrics = &metrics{
	timeToReady: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbox_service_time_to_ready_seconds",
		Help:    "Time from Sandbox creation to a service's first successful probe, by engine.",
		Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60, 120, 300},
	}, []string{"engine"}),
	pullSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbox_image_pull_seconds",
		Help:    "Duration of image pulls, by result.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
	}, []string{"result"}),
	probeAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbox_probe_attempts_total",
		Help: "Readiness probe runs, by engine and result.",
	}, []string{"engine", "result"}),
	failures: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbox_failures_total",
		Help: "Failures reported in Sandbox conditions, by reason (counted when a condition turns to it).",
	}, []string{"reason"}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(sandboxMetrics.timeToReady, sandboxMetrics.pullSeconds,
		sandboxMetrics.probeAttempts, sandboxMetrics.failures)
}

func (m *metrics) observePull(d time.Duration, err error) {
	result := "success"
	if err != nil {
		result = "failure"
		if errors.Is(err, dd.ErrTimeout) {
			result = "timeout"
		}
	}
	m.pullSeconds.WithLabelValues(result).Observe(d.Seconds())
}
