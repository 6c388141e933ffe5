package host

import (
	"context"
	"fmt"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// Data does op, for request id, on the service's data in c: failed is ""
// when it is done, else why not in the engine's words; took is the exec's
// time. err is a Docker call that failed: the engine gave no verdict, and
// the operation is to be tried again (it is done once per id and container).
func (h *Host) Data(ctx context.Context, svc Service, c dd.Container, addr string, op engine.DataOp, id string) (failed string, took time.Duration, err error) {
	step := engine.DataStep(svc.Engine, op, id, svc.Password, addr, svc.Init, svc.InitPerScript)
	start := time.Now()
	out, err := h.exec(ctx, c, step)
	took = time.Since(start)
	switch {
	case err != nil:
		return "", took, err
	case step.Passed(out.ExitCode, out.Stdout):
		return "", took, nil
	}
	return fmt.Sprintf("%s %s: %s", svc.Engine.Name(), op, LastLine(out.Stderr+"\n"+out.Stdout)), took, nil
}

// SnapshotsInitial says whether svc's initial state is worth a snapshot (a
// reset returns to it): its init scripts or features made it, and its engine
// can keep one.
func SnapshotsInitial(svc Service) bool {
	ok, _ := engine.Snapshots(svc.Engine)
	return ok && (len(svc.Init) > 0 || len(svc.Features) > 0)
}

// SnapshotInitial takes svc's initial snapshot in c, when it has one worth
// taking (SnapshotsInitial): "" when it is taken, now or earlier.
func (h *Host) SnapshotInitial(ctx context.Context, svc Service, c dd.Container, addr string) string {
	if !SnapshotsInitial(svc) {
		return ""
	}
	failed, _, err := h.Data(ctx, svc, c, addr, engine.OpInitial, "initial")
	if err != nil {
		return fmt.Sprintf("%s %s: %v", svc.Engine.Name(), engine.OpInitial, err)
	}
	return failed
}
