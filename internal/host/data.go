package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// Data does op, for request (its key, engine.DataEnv), on the service's data
// in c: failed is "" when it is done, else why not in the engine's words;
// took is the exec's time. err is a Docker call that failed: the engine gave
// no verdict, and the operation is to be tried again (the container skips a
// request that is the last it did). A container that did one keeps its next
// one prepared (see dataExecs).
func (h *Host) Data(ctx context.Context, svc Service, c dd.Container, addr string, op engine.DataOp, request string) (failed string, took time.Duration, err error) {
	step := engine.DataStep(svc.Engine, svc.Password, addr, svc.Init, svc.InitPerScript)
	spec := dd.ExecSpec{Cmd: step.Argv, Env: step.Env, Timeout: step.Timeout}
	start := time.Now()
	out, err := h.runData(ctx, c.ID, spec, engine.DataEnv(op, request))
	took = time.Since(start)
	if op != engine.OpInitial {
		go h.data.prepare(h.driver, c.ID, spec)
	}
	switch {
	case err != nil:
		return "", took, err
	case step.Passed(out.ExitCode, out.Stdout):
		return "", took, nil
	}
	return fmt.Sprintf("%s %s: %s", svc.Engine.Name(), op, LastLine(out.Stderr+"\n"+out.Stdout)), took, nil
}

// runData runs the step held for the container when it is the same step,
// else (or when its held shell is gone) a new exec.
func (h *Host) runData(ctx context.Context, id string, spec dd.ExecSpec, env map[string]string) (dd.ExecResult, error) {
	if p := h.data.take(id, spec); p != nil {
		if out, err := p.Run(ctx, env); !errors.Is(err, dd.ErrNotRun) {
			return out, err
		}
	}
	return h.driver.Exec(ctx, id, spec.WithEnv(env))
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

// dataExecs hold, per container that did a data operation, its next one
// prepared: an agent that resets once resets again, and a held exec skips
// the ~100 ms an exec start costs. One shell and one connection each; those
// whose container went (their shell with it) are dropped at the next prepare.
type dataExecs struct {
	mu   sync.Mutex
	held map[string]heldData
}

type heldData struct {
	key string
	p   dd.PreparedExec
}

// dataKey tells a step from another: a held exec runs only the step it was
// prepared for.
func dataKey(spec dd.ExecSpec) string {
	var b strings.Builder
	for _, a := range spec.Cmd {
		b.WriteString(a + "\x00")
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		b.WriteString(k + "=" + spec.Env[k] + "\x00")
	}
	return b.String()
}

// take hands out the exec held for container id, when it was prepared for spec.
func (d *dataExecs) take(id string, spec dd.ExecSpec) dd.PreparedExec {
	d.mu.Lock()
	h, ok := d.held[id]
	delete(d.held, id)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	if h.key != dataKey(spec) || !h.p.Held() {
		h.p.Close()
		return nil
	}
	return h.p
}

// prepare holds spec's next run in container id, replacing any held before.
func (d *dataExecs) prepare(driver dd.Driver, id string, spec dd.ExecSpec) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := driver.PrepareExec(ctx, id, spec)
	if err != nil {
		return // the next request execs as the first did
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		d.held = map[string]heldData{}
	}
	for cid, h := range d.held {
		if cid == id || !h.p.Held() {
			h.p.Close()
			delete(d.held, cid)
		}
	}
	d.held[id] = heldData{key: dataKey(spec), p: p}
}
