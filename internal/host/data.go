package host

import (
	"context"
	"fmt"
	"maps"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// DataRun is where a data operation is.
type DataRun struct {
	// Running: its step runs, For so long; look again at Poll (its end
	// wakes the object before).
	Running   bool
	For, Poll time.Duration
	// Failed is why it failed, in the engine's words; "" once done.
	Failed string
	// Took is how long it took: from its start by this manager to the end
	// seen, else (it was started by a manager before) by the container's clock.
	Took time.Duration
	// Checkpoints are those the container holds after it, when Listed (an
	// operation that lists, DataOp.Lists, done by this step: not one the
	// container found done before).
	Checkpoints []engine.Checkpoint
	Listed      bool
}

// Data does call on the service's data in c, as a step beside the pass (its
// key derives from the call): a pass
// calls it until it answers a run that is not Running. err is a Docker call
// that failed: the engine gave no verdict, and the operation is to be tried
// again (the container skips a request that is the last it did). A request's
// step supersedes the one before in the container: a new request cancels a
// step still running (stuck on a lock, say). A container that did one keeps
// the runner of its next one held ahead (step.Runner.Hold).
func (h *Host) Data(ctx context.Context, svc Service, c dd.Container, addr string, call engine.DataCall) (DataRun, error) {
	s := dataStep(svc, addr, call)
	key := s.Key()
	st, err := h.runStep(ctx, c.ID, s)
	if err == nil && st.Phase == step.Absent {
		// Its state went (a later request's step removed it, or the container's
		// /tmp): the container's mark says whether it was done (dataPrelude).
		h.started.drop(c.ID, key)
		st, err = h.runStep(ctx, c.ID, s)
	}
	if err != nil {
		return DataRun{}, err
	}
	if st.Phase == step.Running {
		return DataRun{Running: true, For: st.Elapsed, Poll: Poll(st.Elapsed)}, nil
	}
	run := DataRun{Took: st.Elapsed}
	if at, ok := h.started.at(c.ID, key); ok {
		run.Took = time.Since(at)
	}
	h.started.drop(c.ID, key)
	if st.Phase != step.Done {
		run.Failed = fmt.Sprintf("%s %s: %s", svc.Engine.Name(), call.Op, st.Message)
	} else if call.Op.Lists() {
		run.Checkpoints, run.Listed = engine.ParseCheckpoints(st.Out)
	}
	if call.Op != engine.OpInitial {
		go h.steps.Hold(c.ID, s)
	}
	return run, nil
}

// dataStep is the step that does call: "data", superseding the one before,
// or "data-initial", which no request cancels.
func dataStep(svc Service, addr string, call engine.DataCall) step.Step {
	es := engine.DataStep(svc.Engine, svc.Password, addr, svc.Init, svc.InitPerScript)
	es.Env = maps.Clone(es.Env)
	maps.Copy(es.Env, call.Env())
	if call.Op == engine.OpInitial {
		return engineStep("data-initial", es)
	}
	s := engineStep("data", es)
	s.Supersedes, s.Output = true, call.Op.Lists()
	return s
}

// SnapshotsInitial says whether svc's initial state is worth a snapshot (a
// reset returns to it): its init scripts or features made it, and its engine
// can keep one.
func SnapshotsInitial(svc Service) bool {
	ok, _ := engine.Snapshots(svc.Engine)
	return ok && (len(svc.Init) > 0 || len(svc.Features) > 0)
}

// SnapshotInitial takes svc's initial snapshot in c, when it has one worth
// taking (SnapshotsInitial), as Data does: a run that is not Running and has
// not Failed is taken, now or earlier; one that failed may be tried again.
func (h *Host) SnapshotInitial(ctx context.Context, svc Service, c dd.Container, addr string) DataRun {
	if !SnapshotsInitial(svc) {
		return DataRun{}
	}
	initial := engine.DataCall{Op: engine.OpInitial, Request: "initial"}
	run, err := h.Data(ctx, svc, c, addr, initial)
	if err != nil {
		return DataRun{Failed: fmt.Sprintf("%s %s: %v", svc.Engine.Name(), engine.OpInitial, err)}
	}
	if run.Failed != "" {
		// Note: retried later, by a step of the same key: it may run again.
		_, _ = h.steps.Forget(ctx, c.ID, dataStep(svc, addr, initial).Key())
	}
	return run
}
