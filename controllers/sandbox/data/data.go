// Package data is spec.data on a Sandbox's services: which request a service
// has still to run, what became of it in its status, and the request's summary
// in status.data and the DataRequest condition.
package data

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// ops maps a request's action to the engine's operation and its event.
var ops = map[sandboxv1.DataAction]struct {
	op    engine.DataOp
	event string
}{
	sandboxv1.DataReset:            {engine.OpReset, sandboxv1.EventDataReset},
	sandboxv1.DataCheckpoint:       {engine.OpCheckpoint, sandboxv1.EventCheckpointed},
	sandboxv1.DataRestore:          {engine.OpRestore, sandboxv1.EventRestored},
	sandboxv1.DataDeleteCheckpoint: {engine.OpDelete, sandboxv1.EventCheckpointDeleted},
}

// Requested is spec.data when it names this engine and the service has
// not finished it yet.
func Requested(sb *sandboxv1.Sandbox, e sandboxv1.Engine, done *sandboxv1.ServiceData) *sandboxv1.DataRequest {
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

// Operation is the engine's operation of a request's action, and the event
// that says it was done.
func Operation(a sandboxv1.DataAction) (op engine.DataOp, event string) {
	o := ops[a]
	return o.op, o.event
}

// Call is what the service's container is asked to do for req, keeping at
// most max checkpoints.
func Call(req *sandboxv1.DataRequest, max int) engine.DataCall {
	op, _ := Operation(req.Action)
	call := engine.DataCall{Op: op, Request: req.Key(), Max: max}
	if req.Action != sandboxv1.DataReset {
		call.Checkpoint = req.Checkpoint()
	}
	return call
}

// Record writes in d (nil: none yet), a service's record of its data, what
// became of req: failed (the engine's words), or done.
func Record(d *sandboxv1.ServiceData, req *sandboxv1.DataRequest, failed string, done *sandboxv1.DataOperation) *sandboxv1.ServiceData {
	if d == nil {
		d = &sandboxv1.ServiceData{}
	}
	d.Record(*req)
	d.Error = failed
	if failed != "" {
		return d
	}
	switch req.Action {
	case sandboxv1.DataReset:
		d.LastReset = done
	case sandboxv1.DataCheckpoint:
		d.LastCheckpoint = done
	case sandboxv1.DataRestore:
		d.LastRestore = done
	}
	return d
}

// Summarize reports spec.data's request in status.data and the
// DataRequest condition, from what each service it names has finished, and
// the services' checkpoints in status.checkpoints.
func Summarize(sb *sandboxv1.Sandbox) {
	SummarizeCheckpoints(sb)
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
			if s.Ready && s.Data != nil && s.Data.Running != "" {
				why = s.Data.Running
			}
			waiting = append(waiting, fmt.Sprintf("%s (%s)", s.Engine, why))
		case s.Data.Error != "":
			failed = append(failed, s.Data.Error)
		}
	}
	st := &sandboxv1.DataRequestStatus{ID: req.ID, Action: req.Action, Services: slices.Clone(req.Services), Name: req.Name, ObservedGeneration: sb.Generation}
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
