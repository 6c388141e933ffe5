package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// serviceWork is one service of one pass: what is wanted, what status said last.
type serviceWork struct {
	sb   *sandboxv1.Sandbox
	svc  host.Service
	prev sandboxv1.ServiceStatus
	// reserved is the pool member recorded for the service this pass, whose own
	// password the Secret holds (nil: none).
	reserved *host.Member
	// initBlocked says why its init scripts cannot be had ("": they can): it
	// is held as it runs (svc.Hold).
	initBlocked string
}

// part is one service's contribution to a condition: ok, or a reason and message.
type part struct {
	ok      bool
	reason  string
	message string
}

func okPart(reason string) part { return part{ok: true, reason: reason} }

// serviceResult is what one pass learned about one service.
type serviceResult struct {
	status                     sandboxv1.ServiceStatus
	images, containers, probes part
	// upToDate says whether the container was made with the operator's current settings.
	upToDate part
	// stalled: no retry can fix this without a change to the spec or the host.
	stalled bool
	// requeue is when the service wants another look (0: only on events and resync).
	requeue time.Duration
	// events are milestones to report on the Sandbox.
	events []serviceEvent
	// claimedReserved: the member reserved for the service serves it now.
	claimedReserved bool
	// current: its containers are all as its spec asks (none outdated, set
	// aside or behind, not held), so what it takes is what its spec says.
	current bool
}

type serviceEvent struct{ eventType, reason, message string }

func (res *serviceResult) after(d time.Duration) { res.requeue = kit.Soonest(res.requeue, d) }

// event records a Normal milestone to report.
func (res *serviceResult) event(reason, message string) {
	res.events = append(res.events, serviceEvent{corev1.EventTypeNormal, reason, message})
}

// warn records a Warning to report.
func (res *serviceResult) warn(reason, message string) {
	res.events = append(res.events, serviceEvent{corev1.EventTypeWarning, reason, message})
}

// waiting says the service waits for something before its container (or probe)
// can make progress, and when to look again.
func (res serviceResult) waiting(containers part, probing string, after time.Duration) serviceResult {
	res.containers = containers
	res.probes = part{reason: sandboxv1.ReasonProbing, message: probing}
	res.after(after)
	return res
}

// redacted removes a password from every message and event of the result: output of
// the engines' tools and Docker's errors are quoted in conditions and events.
func (res serviceResult) redacted(password string) serviceResult {
	if password == "" {
		return res
	}
	hide := func(s string) string { return strings.ReplaceAll(s, password, "<redacted>") }
	res.images.message = hide(res.images.message)
	res.containers.message = hide(res.containers.message)
	res.probes.message = hide(res.probes.message)
	res.upToDate.message = hide(res.upToDate.message)
	if res.status.Data != nil && strings.Contains(res.status.Data.Error, password) {
		res.status.Data = res.status.Data.DeepCopy()
		res.status.Data.Error = hide(res.status.Data.Error)
	}
	res.events = slices.Clone(res.events)
	for i := range res.events {
		res.events[i].message = hide(res.events[i].message)
	}
	return res
}

// behind records that the kept container differs from the operator's current
// settings (why; "" when it does not).
func (res *serviceResult) behind(why string) {
	res.status.Outdated = why != ""
	res.upToDate = okPart(sandboxv1.ReasonUpToDate)
	if why != "" {
		res.upToDate = part{reason: sandboxv1.ReasonOutdated, message: "made with earlier operator settings (" + why +
			"); kept with its data until a rollout (spec.updateStrategy: RollingUpdate) replaces it"}
	}
}

func (res serviceResult) stall() serviceResult {
	res.stalled = true
	res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for the container"}
	return res
}

// dockerFailed records a failed Docker call on the containers condition. What the
// daemon refuses for the container's configuration (dd.ErrInvalid, whatever the
// HTTP status) stalls the service with the daemon's words; anything else is
// retried with the Sandbox's backoff.
func (res serviceResult) dockerFailed(ctx context.Context, err error, doing string) serviceResult {
	if res.probes.reason == "" {
		res.probes = part{reason: sandboxv1.ReasonProbing, message: "waiting for the container"}
	}
	if errors.Is(err, dd.ErrInvalid) {
		res.containers = part{reason: sandboxv1.ReasonInvalidSpec, message: fmt.Sprintf("%s: Docker refused it: %v", doing, err)}
		return res.stall()
	}
	reason := sandboxv1.ReasonDockerError
	if errors.Is(err, dd.ErrUnavailable) {
		reason = sandboxv1.ReasonDockerUnavailable
	}
	retryIn := retryLater(ctx)
	res.containers = part{reason: reason, message: fmt.Sprintf("%s: %v; retrying in %s", doing, err, retryIn.Round(time.Second))}
	return res
}

// merge folds the services' parts into one condition: True when all are ok, else the
// most serious reason and every service's message.
func merge(sb *sandboxv1.Sandbox, condType, okReason string, results []serviceResult, pick func(serviceResult) part) {
	var reason string
	var messages []string
	for _, res := range results {
		p := pick(res)
		if p.ok {
			continue
		}
		if reason == "" || failureReasons[p.reason] && !failureReasons[reason] {
			reason = p.reason
		}
		messages = append(messages, fmt.Sprintf("%s: %s", res.status.Engine, p.message))
	}
	if reason == "" {
		kit.SetCondition(sb, condType, metav1.ConditionTrue, okReason, fmt.Sprintf("all %d services", len(results)))
		return
	}
	kit.SetCondition(sb, condType, metav1.ConditionFalse, reason, strings.Join(messages, "; "))
}

// summarize writes the services' results into status and derives every condition.
func summarize(sb *sandboxv1.Sandbox, results []serviceResult) {
	sb.Status.ObservedGeneration = sb.Generation
	sb.Status.SecretName = sandboxv1.SecretName(sb)
	sb.Status.Services = make([]sandboxv1.ServiceStatus, len(results))
	engines := make([]string, len(results))
	for i, res := range results {
		sb.Status.Services[i] = res.status
		engines[i] = string(res.status.Engine)
	}
	sb.Status.Engines = strings.Join(engines, ",")

	merge(sb, sandboxv1.ConditionImagesReady, sandboxv1.ReasonPresent, results, func(r serviceResult) part { return r.images })
	merge(sb, sandboxv1.ConditionContainersRunning, sandboxv1.ReasonRunning, results, func(r serviceResult) part { return r.containers })
	merge(sb, sandboxv1.ConditionServicesReady, sandboxv1.ReasonReady, results, func(r serviceResult) part { return r.probes })
	merge(sb, sandboxv1.ConditionUpToDate, sandboxv1.ReasonUpToDate, results, func(r serviceResult) part { return r.upToDate })

	stalled := false
	for _, res := range results {
		stalled = stalled || res.stalled
	}
	summarizeReady(sb, stalled)
}

// summarizeReady derives Ready, Reconciling and Stalled from the other conditions.
func summarizeReady(sb *sandboxv1.Sandbox, stalled bool) {
	var blocking *metav1.Condition
	for _, t := range []string{sandboxv1.ConditionImagesReady, sandboxv1.ConditionContainersRunning, sandboxv1.ConditionServicesReady} {
		c := meta.FindStatusCondition(sb.Status.Conditions, t)
		if c == nil || c.Status == metav1.ConditionTrue {
			continue
		}
		if blocking == nil || failureReasons[c.Reason] && !failureReasons[blocking.Reason] {
			blocking = c
		}
	}
	switch {
	case blocking == nil:
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionTrue, sandboxv1.ReasonReady,
			fmt.Sprintf("%s ready; credentials in Secret %s", sb.Status.Engines, sb.Status.SecretName))
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionReconciling)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
		return
	case stalled:
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonFailed, blocking.Message)
		kit.SetCondition(sb, sandboxv1.ConditionStalled, metav1.ConditionTrue, blocking.Reason, blocking.Message)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionReconciling)
	case failureReasons[blocking.Reason]:
		reason := sandboxv1.ReasonFailed
		if blocking.Reason == sandboxv1.ReasonDockerUnavailable {
			reason = sandboxv1.ReasonDockerUnavailable
		}
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, reason, blocking.Message)
		kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, blocking.Reason, "retrying: "+blocking.Message)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
	default:
		kit.SetCondition(sb, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonProvisioning, blocking.Message)
		kit.SetCondition(sb, sandboxv1.ConditionReconciling, metav1.ConditionTrue, blocking.Reason, blocking.Message)
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionStalled)
	}
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
