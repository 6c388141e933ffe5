package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

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
