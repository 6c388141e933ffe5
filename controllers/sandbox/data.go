package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// dataOps maps a request's action to the engine's operation and its event.
var dataOps = map[sandboxv1.DataAction]struct {
	op    engine.DataOp
	event string
}{
	sandboxv1.DataReset:      {engine.OpReset, sandboxv1.EventDataReset},
	sandboxv1.DataCheckpoint: {engine.OpCheckpoint, sandboxv1.EventCheckpointed},
	sandboxv1.DataRestore:    {engine.OpRestore, sandboxv1.EventRestored},
}

// dataRequested is spec.data when it names this engine and the service has
// not finished it yet.
func dataRequested(sb *sandboxv1.Sandbox, e sandboxv1.Engine, done *sandboxv1.ServiceData) *sandboxv1.DataRequest {
	req := sb.Spec.Data
	if req == nil || !names(req, e) || finished(done, req) {
		return nil
	}
	return req
}

// finished says whether d records req as the last request the service
// finished, done or failed: the same request, not only the same id (an id
// reused with another action is another request, to run).
func finished(d *sandboxv1.ServiceData, req *sandboxv1.DataRequest) bool {
	if d == nil || d.RequestID != req.ID {
		return false
	}
	if done, ok := d.Request(); ok {
		return done.Same(*req)
	}
	return legacyAction(d, req.Action) == req.Action
}

// legacyAction is the action of the request d finished when an earlier
// release wrote it (requestID alone): that of the latest operation done under
// its id, else (it failed, leaving no operation) def. Its services are not
// known, and are read as spec.data's, so that an upgrade never runs a
// finished request again (a Restore done twice loses what the agent wrote
// since); an id that release reused with another action is told apart.
func legacyAction(d *sandboxv1.ServiceData, def sandboxv1.DataAction) sandboxv1.DataAction {
	var last *sandboxv1.DataOperation
	for _, o := range []struct {
		action sandboxv1.DataAction
		op     *sandboxv1.DataOperation
	}{{sandboxv1.DataReset, d.LastReset}, {sandboxv1.DataCheckpoint, d.LastCheckpoint}, {sandboxv1.DataRestore, d.LastRestore}} {
		if o.op != nil && o.op.ID == d.RequestID && (last == nil || last.Time.Before(&o.op.Time)) {
			last, def = o.op, o.action
		}
	}
	return def
}

// names says whether req is for engine e (no services named: every one).
func names(req *sandboxv1.DataRequest, e sandboxv1.Engine) bool {
	return len(req.Services) == 0 || slices.Contains(req.Services, e)
}

// serviceData carries what earlier requests did to the service's data, and
// does spec.data's request once the service answers: in its container, as a
// step of this pass. A failure is recorded, in the engine's words, and is
// not retried: the request is finished, the service serves as before.
func (r *Reconciler) serviceData(ctx context.Context, w serviceWork, res serviceResult) serviceResult {
	// Note: a copy, also where a settled service's status is prev's (its pointer).
	if w.prev.Data != nil && res.status.Engine == w.prev.Engine && (res.status.Data == nil || res.status.Data == w.prev.Data) {
		res.status.Data = w.prev.Data.DeepCopy()
	}
	req := dataRequested(w.sb, res.status.Engine, res.status.Data)
	if req == nil || !res.status.Ready {
		return res
	}
	op := dataOps[req.Action]
	failed, took := "", time.Duration(0)
	if ok, why := engine.Snapshots(w.svc.Engine); !ok && op.op != engine.OpReset {
		failed = why
	} else if c, err := r.Host.Inspect(ctx, res.status.ContainerID); err != nil {
		return res.dockerFailed(ctx, err, "inspecting "+w.svc.Container.Name+" for spec.data")
	} else if failed, took, err = r.Host.Data(ctx, w.svc, c, host.Address(c, w.svc.Network), op.op, req.Key()); err != nil {
		return res.dockerFailed(ctx, err, fmt.Sprintf("%s %s for spec.data", req.Action, w.svc.Container.Name))
	}
	return recordData(w, res, req, failed, took)
}

// recordData writes what became of req on the service in its status, and
// the event that says so.
func recordData(w serviceWork, res serviceResult, req *sandboxv1.DataRequest, failed string, took time.Duration) serviceResult {
	data := res.status.Data
	if data == nil {
		data = &sandboxv1.ServiceData{}
	}
	data.Record(*req)
	data.Error = failed
	res.status.Data = data
	name := w.svc.Engine.Name()
	if failed != "" {
		res.warn(sandboxv1.ReasonDataFailed, fmt.Sprintf("%s: %s %s failed: %s; the service serves as before", name, req.Action, req.ID, failed))
		return res
	}
	done := &sandboxv1.DataOperation{ID: req.ID, Generation: w.sb.Generation, Time: metav1.Now(),
		ContainerID: res.status.ContainerID, DurationMilliseconds: took.Milliseconds()}
	switch req.Action {
	case sandboxv1.DataReset:
		data.LastReset = done
	case sandboxv1.DataCheckpoint:
		data.LastCheckpoint = done
	case sandboxv1.DataRestore:
		data.LastRestore = done
	}
	res.event(dataOps[req.Action].event, fmt.Sprintf("%s: %s %s done in %s on container %s", name, req.Action, req.ID, took.Round(time.Millisecond), w.svc.Container.Name))
	return res
}

// summarizeData reports spec.data's request in status.data and the
// DataRequest condition, from what each service it names has finished.
func summarizeData(sb *sandboxv1.Sandbox) {
	req := sb.Spec.Data
	if req == nil {
		sb.Status.Data = nil
		meta.RemoveStatusCondition(&sb.Status.Conditions, sandboxv1.ConditionDataRequest)
		return
	}
	var waiting, failed []string
	for _, s := range sb.Status.Services {
		switch {
		case !names(req, s.Engine):
		case !finished(s.Data, req):
			why := "not ready"
			if s.Ready {
				why = "next"
			}
			waiting = append(waiting, fmt.Sprintf("%s (%s)", s.Engine, why))
		case s.Data.Error != "":
			failed = append(failed, s.Data.Error)
		}
	}
	st := &sandboxv1.DataRequestStatus{ID: req.ID, Action: req.Action, Services: slices.Clone(req.Services), ObservedGeneration: sb.Generation}
	if prev := sb.Status.Data; prev != nil && prev.Request().Same(*req) && prev.CompletionTime != nil {
		st.CompletionTime = prev.CompletionTime
	}
	switch {
	case len(waiting) > 0:
		st.Phase, st.Message, st.CompletionTime = sandboxv1.DataRunning, "waiting for "+strings.Join(waiting, ", "), nil
		kit.SetCondition(sb, sandboxv1.ConditionDataRequest, metav1.ConditionFalse, sandboxv1.ReasonDataInProgress,
			fmt.Sprintf("%s %s: %s", req.Action, req.ID, st.Message))
	case len(failed) > 0:
		st.Phase, st.Message = sandboxv1.DataFailed, strings.Join(failed, "; ")
		kit.SetCondition(sb, sandboxv1.ConditionDataRequest, metav1.ConditionFalse, sandboxv1.ReasonDataFailed,
			fmt.Sprintf("%s %s failed: %s", req.Action, req.ID, st.Message))
	default:
		st.Phase, st.Message = sandboxv1.DataSucceeded, ""
		kit.SetCondition(sb, sandboxv1.ConditionDataRequest, metav1.ConditionTrue, sandboxv1.ReasonDataSucceeded,
			fmt.Sprintf("%s %s done", req.Action, req.ID))
	}
	if st.Phase != sandboxv1.DataRunning && st.CompletionTime == nil {
		now := metav1.Now()
		st.CompletionTime = &now
	}
	sb.Status.Data = st
}
