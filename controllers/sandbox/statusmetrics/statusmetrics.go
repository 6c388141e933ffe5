// Package statusmetrics is what dashboards read of each Sandbox: a series per
// condition of each Sandbox, read from the informer cache at scrape time.
package statusmetrics

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
)

// statusCollector is what dashboards read of each Sandbox, in the way
// cert-manager exposes its certificates: one series per condition type of each
// Sandbox, carrying its status and reason, and when it last changed. It reads the
// informer cache at scrape time, so a Sandbox's series go with it and never lag;
// there are at most Sandboxes × condition types. Only the elected manager reports
// them, so replicas do not double every series.
type statusCollector struct {
	reader    client.Reader
	elected   <-chan struct{}
	count     *prometheus.Desc
	condition *prometheus.Desc
	since     *prometheus.Desc
}

func newStatusCollector(reader client.Reader, elected <-chan struct{}) *statusCollector {
	labels := []string{"namespace", "name", "agent", "type", "status", "reason"}
	return &statusCollector{reader: reader, elected: elected,
		count: prometheus.NewDesc("sandbox_sandboxes", "Live Sandboxes by the status of their Ready condition.", []string{"ready"}, nil),
		condition: prometheus.NewDesc("sandbox_status_condition",
			"A condition of a Sandbox: 1, with its status and reason as labels (one series per Sandbox and condition type).", labels, nil),
		since: prometheus.NewDesc("sandbox_status_condition_last_transition_timestamp_seconds",
			"When a condition of a Sandbox last changed status (Unix seconds), with its status and reason as labels.", labels, nil),
	}
}

// Register (re)registers the collector for this manager; a
// process that starts a new manager (tests do) replaces the previous one's.
func Register(reader client.Reader, elected <-chan struct{}) error {
	c := newStatusCollector(reader, elected)
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

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.condition
	ch <- c.since
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	select {
	case <-c.elected:
	default:
		return // a standby replica: the leader reports
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list sandboxv1.SandboxList
	if err := c.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(c.count, err)
		return
	}
	counts := map[metav1.ConditionStatus]float64{metav1.ConditionTrue: 0, metav1.ConditionFalse: 0, metav1.ConditionUnknown: 0}
	for i := range list.Items {
		sb := &list.Items[i]
		status := metav1.ConditionUnknown
		if cond := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); cond != nil {
			status = cond.Status
		}
		counts[status]++
		for _, cond := range sb.Status.Conditions {
			values := []string{sb.Namespace, sb.Name, sb.Spec.AgentID, cond.Type, string(cond.Status), cond.Reason}
			ch <- prometheus.MustNewConstMetric(c.condition, prometheus.GaugeValue, 1, values...)
			ch <- prometheus.MustNewConstMetric(c.since, prometheus.GaugeValue, float64(cond.LastTransitionTime.Unix()), values...)
		}
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, n, string(status))
	}
}
