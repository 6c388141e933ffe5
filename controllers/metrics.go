package controllers

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
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

// registerReadyCollector (re)registers the Sandboxes-by-Ready gauge for this reader;
// a process that starts a new manager (tests do) replaces the previous one's.
func registerReadyCollector(reader client.Reader) error {
	c := newReadyCollector(reader)
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
		ctrlmetrics.Registry.Unregister(are.ExistingCollector)
		return ctrlmetrics.Registry.Register(c)
	}
	return nil
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

// readyCollector reports live Sandboxes by the status of their Ready condition,
// read from the informer cache at scrape time, so it is never out of step.
type readyCollector struct {
	reader client.Reader
	desc   *prometheus.Desc
}

func newReadyCollector(reader client.Reader) *readyCollector {
	return &readyCollector{reader: reader, desc: prometheus.NewDesc("sandbox_sandboxes",
		"Live Sandboxes by the status of their Ready condition.", []string{"ready"}, nil)}
}

func (c *readyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *readyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list sandboxv1.SandboxList
	if err := c.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	counts := map[metav1.ConditionStatus]float64{metav1.ConditionTrue: 0, metav1.ConditionFalse: 0, metav1.ConditionUnknown: 0}
	for i := range list.Items {
		status := metav1.ConditionUnknown
		if cond := meta.FindStatusCondition(list.Items[i].Status.Conditions, sandboxv1.ConditionReady); cond != nil {
			status = cond.Status
		}
		counts[status]++
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, string(status))
	}
}
