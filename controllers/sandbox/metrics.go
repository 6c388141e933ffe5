package sandbox

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// metrics live on controller-runtime's registry, so the manager's /metrics serves
// them next to the workqueue and client metrics.
type metrics struct {
	timeToReady   *prometheus.HistogramVec
	pullSeconds   *prometheus.HistogramVec
	probeAttempts *prometheus.CounterVec
	failures      *prometheus.CounterVec
	// ownerGoneDeletions count Sandboxes deleted for their owner; claims and
	// claimSeconds the warm pool claims.
	ownerGoneDeletions prometheus.Counter
	claims             *prometheus.CounterVec
	claimSeconds       *prometheus.HistogramVec
	// statusConflicts count status writes refused for a newer Sandbox, by
	// outcome: written again (only its spec or metadata moved) or dropped
	// (its status moved: patchStatus).
	statusConflicts *prometheus.CounterVec
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
	ownerGoneDeletions: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sandbox_owner_gone_deletions_total",
		Help: "Sandboxes deleted because their owner container was gone for the grace period.",
	}),
	claims: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbox_pool_claims_total",
		Help: "Services that looked for a warm pool member, by engine and result (hit: claimed; miss: none ready, provisioned cold).",
	}, []string{"engine", "result"}),
	claimSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbox_pool_claim_seconds",
		Help:    "Duration of a claim (record, rename, rotate), by engine.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5},
	}, []string{"engine"}),
	statusConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandbox_status_conflicts_total",
		Help: "Status writes refused because the Sandbox changed since the pass read it, by outcome: retried (only its spec or metadata moved: written again on the new version) or dropped (its status moved: the pass is run again from the newer status).",
	}, []string{"outcome"}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(sandboxMetrics.timeToReady, sandboxMetrics.pullSeconds,
		sandboxMetrics.probeAttempts, sandboxMetrics.failures, sandboxMetrics.ownerGoneDeletions,
		sandboxMetrics.claims, sandboxMetrics.claimSeconds, sandboxMetrics.statusConflicts,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sandbox_steps_awaited_total",
			Help: "Times a pass read a container step's state (a seed's) again in one call, waiting on it: 0 unless a bug holds workers on steps.",
		}, func() float64 { return float64(host.StepsAwaited()) }))
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
