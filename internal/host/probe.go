package host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// Activation is where a service's features are.
type Activation struct {
	// Running: a step enabling them runs beside the pass (it may wait on a
	// lock the tenant holds); Progress says for how long, Poll when to look
	// again.
	Running  bool
	Progress string
	Poll     time.Duration
	// Failed is what went wrong ("": enabled and verified).
	Failed string
}

// Activate enables the service's features, each engine step as a step beside
// the pass (the inline wait answers a quick one at once), then verifies them
// with the engine's static query, a short read.
func (h *Host) Activate(ctx context.Context, svc Service, c dd.Container, addr string) Activation {
	e := svc.Engine
	steps, err := e.ActivateFeatures(svc.Password, addr, svc.Features)
	if err != nil {
		return Activation{Failed: err.Error()}
	}
	keys := make([]step.Key, len(steps))
	for i, es := range steps {
		s := engineStep("features-"+strconv.Itoa(i), es)
		keys[i] = s.Key()
		st, err := h.runStep(ctx, c.ID, s)
		if err == nil && st.Ended() && st.Phase != step.Done {
			h.retryStep(ctx, c, s.Key()) // its retry runs it again
		}
		switch {
		case err != nil:
			return Activation{Failed: fmt.Sprintf("activating %s features: %v", e.Name(), err)}
		case st.Phase == step.Running:
			return Activation{Running: true, Poll: Poll(st.Elapsed),
				Progress: fmt.Sprintf("activating %s features %s: running %s", e.Name(), strings.Join(svc.Features, ", "), st.Elapsed)}
		case st.Phase != step.Done:
			return Activation{Failed: fmt.Sprintf("activating %s features %s failed (exit code %d): %s", e.Name(),
				strings.Join(svc.Features, ", "), st.ExitCode, st.Message)}
		}
	}
	verify, parse := e.VerifyFeatures(svc.Password, addr)
	out, err := h.exec(ctx, c, verify)
	if err != nil || out.ExitCode != 0 || len(engine.Missing(svc.Features, parse(out.Stdout))) > 0 {
		for _, k := range keys {
			h.retryStep(ctx, c, k) // the retry enables them again
		}
	}
	switch {
	case err != nil:
		return Activation{Failed: fmt.Sprintf("verifying %s features: %v", e.Name(), err)}
	case out.ExitCode != 0:
		return Activation{Failed: fmt.Sprintf("verifying %s features failed (exit code %d): %s", e.Name(), out.ExitCode, LastLine(out.Stderr+"\n"+out.Stdout))}
	}
	if missing := engine.Missing(svc.Features, parse(out.Stdout)); len(missing) > 0 {
		return Activation{Failed: fmt.Sprintf("%s features missing after activation: %s (image %s)", e.Name(), strings.Join(missing, ", "), svc.Image())}
	}
	return Activation{}
}

// Seeding is where a service's seed is.
type Seeding struct {
	// Running: the scripts run, or wait for a lane; Progress says which
	// script and for how long, or where it waits.
	Running  bool
	Progress string
	// Poll is when to look again while it runs (see Poll, LaneWaitPoll).
	Poll time.Duration
	// Failed is the failing key and its first error line; CutShort says an
	// earlier run on the container ended unfinished (cancelled, killed with
	// its runner), so its data is in doubt.
	Failed   string
	CutShort bool
}

// Seed starts the service's init scripts on c once it has a lane, once per
// container, as a step beside the pass, or observes them: a pass calls it
// until it answers a seed that is not Running. A seed found running (its
// manager restarted) holds its lane whatever the caps; an ended one gives
// its lane back.
func (h *Host) Seed(ctx context.Context, svc Service, c dd.Container, addr string, lane Lane) Seeding {
	s := seedStep(svc, addr)
	if key := s.Key(); !h.started.has(c.ID, key) {
		if !h.started.known(c.ID, key) {
			st, err := h.steps.Observe(ctx, c.ID, key)
			switch {
			case err != nil:
				return Seeding{Failed: fmt.Sprintf("running the init scripts: %v", err)}
			case st.Phase == step.Running: // its manager restarted
				lane.hold()
				h.started.add(c.ID, key, time.Now())
				return seeding(st, nil, len(svc.Init))
			case st.Ended():
				lane.release()
				h.started.add(c.ID, key, time.Now())
				return seeding(st, nil, len(svc.Init))
			}
			h.started.absent(c.ID, key)
		}
		if t := lane.acquire(); !t.Granted {
			return Seeding{Running: true, Progress: t.String(), Poll: LaneWaitPoll(t.Position)}
		}
	}
	st, err := h.runStep(ctx, c.ID, s)
	if err == nil && st.Ended() {
		lane.release()
	}
	return seeding(st, err, len(svc.Init))
}

// SeedUnderway says this manager started the service's seed on c, or found
// it waiting for a lane: its probe passed and its features were verified
// before, so a pass need not do them again while the seed runs or waits.
func (h *Host) SeedUnderway(svc Service, c dd.Container, addr string) bool {
	return len(svc.Init) > 0 && h.started.known(c.ID, seedStep(svc, addr).Key())
}

func seedStep(svc Service, addr string) step.Step {
	return engineStep("seed", engine.Seed(svc.Engine, svc.Password, addr, svc.Init, svc.InitPerScript, svc.InitTimeout))
}

func seeding(st step.State, err error, scripts int) Seeding {
	switch {
	case err != nil:
		return Seeding{Failed: fmt.Sprintf("running the init scripts: %v", err)}
	case st.Phase == step.Running:
		return Seeding{Running: true, Progress: seedProgress(st, scripts), Poll: Poll(st.Elapsed)}
	case st.Phase == step.Done:
		return Seeding{}
	case st.Phase == step.Failed && st.ExitCode == 1:
		return Seeding{Failed: st.Message}
	}
	// Cancelled, lost, or the script's own "cut short" (engine.InitCutShort).
	return Seeding{Failed: st.Message, CutShort: true}
}

// seedProgress says which script runs and for how long: the seed writes
// "<i> of <n> scripts, <key>" before each (untrusted, bounded text: the
// tenant's scripts can write the same file).
func seedProgress(st step.State, n int) string {
	if st.Progress == "" {
		return fmt.Sprintf("starting %d scripts, for %s", n, st.Elapsed)
	}
	return fmt.Sprintf("%s running %s (seed running %s)", st.Progress, st.ProgressFor, st.Elapsed)
}

// exec runs a short engine step inline, killed in the container at its
// timeout: a probe that hangs (a half-open connection, a starved Node.js) would
// otherwise leave the container busy, every later probe refused, until it ends.
func (h *Host) exec(ctx context.Context, c dd.Container, step engine.Step) (dd.ExecResult, error) {
	return h.driver.Exec(ctx, c.ID, dd.ExecSpec{Cmd: step.Argv, Env: step.Env, Timeout: step.Timeout, KillAtTimeout: true})
}

// ExitMessage says how a stopped container ended, with the last lines of its log.
func (h *Host) ExitMessage(ctx context.Context, c dd.Container) string {
	msg := fmt.Sprintf("container %s exited with code %d", c.Name, c.ExitCode)
	if c.OOMKilled {
		msg += " (OOM-killed: raise resources.memory)"
	}
	if c.Error != "" {
		msg += ": " + c.Error
	}
	if logs, err := h.driver.LogsTail(ctx, c.ID, 5); err == nil && strings.TrimSpace(logs) != "" {
		msg += "; last log lines: " + strings.Join(strings.Fields(strings.TrimSpace(logs)), " ")
	}
	if len(msg) > 1024 {
		msg = msg[:1024] + "…"
	}
	return msg
}

// Address is c's IP on the service network (any network's when it has none there).
func Address(c dd.Container, network string) string {
	if network == "" {
		network = "bridge"
	}
	if ep, ok := c.Networks[network]; ok && ep.IPAddress != "" {
		return ep.IPAddress
	}
	for _, n := range slices.Sorted(maps.Keys(c.Networks)) {
		if ip := c.Networks[n].IPAddress; ip != "" {
			return ip
		}
	}
	return ""
}

// LastLine is the last non-empty line of a tool's output, bounded.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if len(l) > 512 {
				l = l[:512] + "…"
			}
			return l
		}
	}
	return "no output"
}
