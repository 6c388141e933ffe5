package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// Probing is what a readiness probe found.
type Probing struct {
	Passed bool
	// Detail is what a probe that did not pass said.
	Detail string
	// Running: the probe runs beside the pass (Poll: when to look again);
	// its end wakes the object.
	Running bool
	Poll    time.Duration
}

// slowProbeBound is how many times the engine's own bound a probe run
// beside the pass gets.
const slowProbeBound = 4

// Probe runs the engine's readiness probe against c at addr: inline, bounded
// by the engine's timeout, while it answers within it. One that outran it
// (a loaded host, mongosh's Node.js start, a tenant keeping its own service
// busy) marks the container: its probes from then on run as a step beside the
// pass, with a longer bound, so that a slow service answers in the end and no
// pass waits for it.
func (h *Host) Probe(ctx context.Context, svc Service, c dd.Container, addr string) Probing {
	if h.started.slowProbe(c.ID) {
		return h.probeBeside(ctx, svc, c, addr)
	}
	es := svc.Engine.Probe(svc.Password, addr)
	out, err := h.exec(ctx, c, es)
	switch {
	case errors.Is(err, dd.ErrTimeout):
		h.started.probesSlow(c.ID)
		return h.probeBeside(ctx, svc, c, addr)
	case err != nil:
		return Probing{Detail: err.Error()}
	case es.Passed(out.ExitCode, out.Stdout):
		return Probing{Passed: true}
	}
	return Probing{Detail: fmt.Sprintf("exit code %d: %s", out.ExitCode, LastLine(out.Stderr+"\n"+out.Stdout))}
}

// probeBeside starts the probe as a step, or observes the one started; an
// ended one is forgotten, so that the next call probes anew.
func (h *Host) probeBeside(ctx context.Context, svc Service, c dd.Container, addr string) Probing {
	es := svc.Engine.Probe(svc.Password, addr)
	inline := es.Timeout
	es = es.Checked().Within(slowProbeBound * inline)
	s := engineStep("probe", es)
	st, err := h.runStep(ctx, c.ID, s)
	switch {
	case err != nil:
		return Probing{Detail: err.Error()}
	case st.Phase == step.Running:
		return Probing{Running: true, Poll: Poll(st.Elapsed), Detail: fmt.Sprintf(
			"its probe runs beside the pass, bounded by %s (one outran %s): %s so far", es.Timeout, inline, st.Elapsed.Round(time.Second))}
	}
	_, _ = h.steps.Forget(ctx, c.ID, s.Key()) // one left is found Earlier, below
	h.started.drop(c.ID, s.Key())
	switch {
	case st.Earlier:
		return Probing{Detail: "an earlier probe's end was found; probing again"}
	case st.Phase == step.Done:
		return Probing{Passed: true}
	}
	return Probing{Detail: fmt.Sprintf("exit code %d: %s", st.ExitCode, st.Message)}
}
