package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox/data"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// serviceData carries what earlier requests did to the service's data, and
// does spec.data's request once the service answers: in its container, as a
// step beside the passes (a pass starts it, a later one, woken by its end,
// records it; meanwhile the request reports it running). A failure is
// recorded, in the engine's words, and is not retried: the request is
// finished, the service serves as before. The checkpoints recorded are those
// its container held when last listed: none it took in another container.
func (r *Reconciler) serviceData(ctx context.Context, w serviceWork, res serviceResult) serviceResult {
	// Note: a copy, also where a settled service's status is prev's (its pointer).
	if w.prev.Data != nil && res.status.Engine == w.prev.Engine && (res.status.Data == nil || res.status.Data == w.prev.Data) {
		res.status.Data = w.prev.Data.DeepCopy()
	}
	if res.status.Data != nil {
		res.status.Data.Running = ""
		r.checkpointsLost(w, &res, data.Held(res.status.Data, res.status.ContainerID), "its container was made again")
	}
	req := data.Requested(w.sb, res.status.Engine, res.status.Data)
	if req == nil {
		return r.relist(ctx, w, res)
	}
	if !res.status.Ready {
		return res
	}
	call := data.Call(req, r.Options.Checkpoints(maxCheckpoints(w.sb, res.status.Engine)))
	var run host.DataRun
	if ok, why := engine.Snapshots(w.svc.Engine); !ok && call.Op != engine.OpReset {
		run.Failed = why
	} else if c, err := r.Host.Inspect(ctx, res.status.ContainerID); err != nil {
		return res.dockerFailed(ctx, err, "inspecting "+w.svc.Container.Name+" for spec.data")
	} else if run, err = r.Host.Data(ctx, w.svc, c, host.Address(c, w.svc.Network), call); err != nil {
		return res.dockerFailed(ctx, err, fmt.Sprintf("%s %s for spec.data", req.Action, w.svc.Container.Name))
	}
	if res.status.Data == nil {
		res.status.Data = &sandboxv1.ServiceData{}
	}
	if run.Running {
		res.status.Data.Running = fmt.Sprintf("%s running %s", call.Op, run.For)
		res.after(run.Poll)
		return res
	}
	return r.dataDone(w, res, req, call, run)
}

// dataDone records req, done or failed, with the checkpoints the run listed.
func (r *Reconciler) dataDone(w serviceWork, res serviceResult, req *sandboxv1.DataRequest, call engine.DataCall, run host.DataRun) serviceResult {
	done := &sandboxv1.DataOperation{ID: req.ID, Generation: w.sb.Generation, Time: metav1.Now(),
		ContainerID: res.status.ContainerID, DurationMilliseconds: run.Took.Milliseconds()}
	res.status.Data = data.Record(res.status.Data, req, run.Failed, done)
	if run.Listed {
		r.recalls.listedAt(w.sb, res.status.ContainerID)
		deleted := ""
		if call.Op == engine.OpDelete {
			deleted = call.Checkpoint
		}
		r.checkpointsLost(w, &res, data.Listed(res.status.Data, run.Checkpoints, res.status.ContainerID, deleted), "its container no longer holds them")
	}
	name := w.svc.Engine.Name()
	what := string(req.Action) + " " + req.ID
	if call.Checkpoint != "" {
		what += " of checkpoint " + call.Checkpoint
	}
	if run.Failed != "" {
		res.warn(sandboxv1.ReasonDataFailed, fmt.Sprintf("%s: %s failed: %s; the service serves as before", name, what, run.Failed))
		return res
	}
	_, event := data.Operation(req.Action)
	res.event(event, fmt.Sprintf("%s: %s done in %s on container %s", name, what, run.Took.Round(time.Millisecond), w.svc.Container.Name))
	return res
}

// checkpointsLost tells of the checkpoints a service lost, and why.
func (r *Reconciler) checkpointsLost(w serviceWork, res *serviceResult, lost []string, why string) {
	if len(lost) == 0 {
		return
	}
	slices.Sort(lost)
	res.warn(sandboxv1.EventCheckpointsLost, fmt.Sprintf("%s: checkpoints %s are gone: %s", w.svc.Engine.Name(), strings.Join(lost, ", "), why))
}

// maxCheckpoints is spec.services[].maxCheckpoints of engine e (nil: unset).
func maxCheckpoints(sb *sandboxv1.Sandbox, e sandboxv1.Engine) *int32 {
	for _, s := range sb.Spec.Services {
		if s.Engine == e {
			return s.MaxCheckpoints
		}
	}
	return nil
}
