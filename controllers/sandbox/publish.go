package sandbox

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// publish is a pass's one write of what it learned: the Secret's hosts when they
// changed (first, so a client that sees Ready reads a current Secret), then status.
func (r *Reconciler) publish(ctx context.Context, before, sb *sandboxv1.Sandbox, creds *credentials) error {
	var err error
	if creds != nil && creds.made() == nil {
		err = r.publishSecret(ctx, sb, creds)
	}
	return errors.Join(err, r.writeStatus(ctx, before, sb))
}

// report emits events for milestones and for conditions that turned to a failure,
// once per transition rather than every pass, once the pass wrote its status.
func (r *Reconciler) report(ctx context.Context, sb *sandboxv1.Sandbox, results []serviceResult, wasReady bool, old map[string]string) {
	sb = sb.DeepCopy()
	afterPass(ctx, func() { r.reportNow(ctx, sb, results, wasReady, old) })
}

func (r *Reconciler) reportNow(ctx context.Context, sb *sandboxv1.Sandbox, results []serviceResult, wasReady bool, old map[string]string) {
	log := logf.FromContext(ctx)
	for _, res := range results {
		for _, ev := range res.events {
			r.Recorder.Eventf(sb, nil, ev.eventType, ev.reason, sandboxv1.ActionReconcile, "%s", ev.message)
			log.Info("Service event", "engine", res.status.Engine, "reason", ev.reason, "message", ev.message)
		}
	}
	for _, c := range sb.Status.Conditions {
		if !turnedToFailure(c, old) {
			continue
		}
		sandboxMetrics.failures.WithLabelValues(c.Reason).Inc()
		r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, c.Reason, sandboxv1.ActionReconcile, "%s", c.Message)
		log.Info("Sandbox condition failed", "condition", c.Type, "reason", c.Reason, "message", c.Message)
	}
	if !wasReady && isReady(sb) {
		r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, sandboxv1.EventProvisioned, sandboxv1.ActionReconcile,
			"%s ready; credentials in Secret %s", sb.Status.Engines, sb.Status.SecretName)
		log.Info("Sandbox ready", "services", sb.Status.Engines, "elapsed", time.Since(sb.CreationTimestamp.Time).Round(time.Millisecond))
	}
}

// turnedToFailure: a per-stage condition whose reason became a failure this pass
// (the summary conditions repeat it and are not reported again).
func turnedToFailure(c metav1.Condition, old map[string]string) bool {
	switch c.Type {
	case sandboxv1.ConditionReady, sandboxv1.ConditionReconciling, sandboxv1.ConditionStalled:
		return false
	}
	return c.Status != metav1.ConditionTrue && failureReasons[c.Reason] && old[c.Type] != c.Reason
}

func isReady(sb *sandboxv1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1.ConditionReady)
}

func conditionReasons(sb *sandboxv1.Sandbox) map[string]string {
	out := map[string]string{}
	for _, c := range sb.Status.Conditions {
		out[c.Type] = c.Reason
	}
	return out
}
