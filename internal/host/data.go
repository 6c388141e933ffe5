package host

import (
	"context"
	"fmt"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// Data does op, for request id, on the service's data in c: "" when it is done, else why not
// in the engine's words; took is the exec's time.
func (h *Host) Data(ctx context.Context, svc Service, c dd.Container, addr string, op engine.DataOp, id string) (failed string, took time.Duration) {
	step := engine.DataStep(svc.Engine, op, id, svc.Password, addr, svc.Init, svc.InitPerScript)
	start := time.Now()
	out, err := h.exec(ctx, c, step)
	took = time.Since(start)
	switch {
	case err != nil:
		return fmt.Sprintf("%s %s: %v", svc.Engine.Name(), op, err), took
	case step.Passed(out.ExitCode, out.Stdout):
		return "", took
	}
	return fmt.Sprintf("%s %s: %s", svc.Engine.Name(), op, LastLine(out.Stderr+"\n"+out.Stdout)), took
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
	failed, _ := h.Data(ctx, svc, c, addr, engine.OpInitial, "initial")
	return failed
}
