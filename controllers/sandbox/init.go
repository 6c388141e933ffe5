package sandbox

import (
	"fmt"
	"strings"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// errInit says a service's init scripts cannot be had (class.InitError).
type errInit = class.InitError

// heldBack is a held service (svc.Hold) that does not run: it is not made
// again, whatever stopped it, while its growth is refused (it waits for room)
// or its init scripts cannot be had (it is stalled until they change).
func (w serviceWork) heldBack(phase host.Phase, res serviceResult) serviceResult {
	state := fmt.Sprintf("%s is %s", w.svc.Container.Name, strings.ToLower(string(phase)))
	if w.initBlocked == "" {
		return res.waiting(part{reason: sandboxv1.ReasonCreating, message: state + ": not made again while its spec's growth is refused"},
			w.svc.Engine.Name()+" is not running", quotaRecheck)
	}
	res.containers = part{reason: sandboxv1.ReasonInitFailed, message: state + "; it is made once its init scripts can be read: " + w.initBlocked}
	res.probes = part{reason: sandboxv1.ReasonInitFailed, message: w.initBlocked}
	res.stalled = true
	return res
}

// unseeded is a service whose init scripts cannot be had and whose container
// runs without having answered (made by a create that began before they
// broke, or restarted): it is neither probed nor seeded without them, so it
// is never Ready unseeded; it waits, stalled, until they can be read.
func (w serviceWork) unseeded(res serviceResult) serviceResult {
	res.containers = part{reason: sandboxv1.ReasonInitFailed, message: fmt.Sprintf(
		"%s has not answered yet: it is probed and seeded once its init scripts can be read: %s", w.svc.Container.Name, w.initBlocked)}
	res.probes = part{reason: sandboxv1.ReasonInitFailed, message: w.initBlocked}
	res.stalled = true
	return res
}

// initNote says, on a service whose init scripts cannot be had, that what
// runs of it is kept as it is, its data untouched, until they are back.
func (w serviceWork) initNote(res serviceResult) serviceResult {
	if w.initBlocked != "" {
		res.upToDate = part{reason: sandboxv1.ReasonInitFailed, message: w.initBlocked + "; what runs is kept as it is meanwhile"}
	}
	return res
}
