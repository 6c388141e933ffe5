package host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// Probe runs the engine's bounded readiness probe once against c at addr. It
// returns whether it passed and, when not, what the probe said.
func (h *Host) Probe(ctx context.Context, svc Service, c dd.Container, addr string) (passed bool, detail string) {
	step := svc.Engine.Probe(svc.Password, addr)
	out, err := h.exec(ctx, c, step)
	switch {
	case err != nil:
		return false, err.Error()
	case step.Passed(out.ExitCode, out.Stdout):
		return true, ""
	}
	return false, fmt.Sprintf("exit code %d: %s", out.ExitCode, LastLine(out.Stderr+"\n"+out.Stdout))
}

// Activate enables the service's features, then verifies them with the engine's
// static query; it returns what went wrong, or "".
func (h *Host) Activate(ctx context.Context, svc Service, c dd.Container, addr string) string {
	e := svc.Engine
	steps, err := e.ActivateFeatures(svc.Password, addr, svc.Features)
	if err != nil {
		return err.Error()
	}
	for _, step := range steps {
		out, err := h.exec(ctx, c, step)
		if err != nil {
			return fmt.Sprintf("activating %s features: %v", e.Name(), err)
		}
		if !step.Passed(out.ExitCode, out.Stdout) {
			return fmt.Sprintf("activating %s features %s failed (exit code %d): %s", e.Name(),
				strings.Join(svc.Features, ", "), out.ExitCode, LastLine(out.Stderr+"\n"+out.Stdout))
		}
	}
	verify, parse := e.VerifyFeatures(svc.Password, addr)
	out, err := h.exec(ctx, c, verify)
	if err != nil {
		return fmt.Sprintf("verifying %s features: %v", e.Name(), err)
	}
	if out.ExitCode != 0 {
		return fmt.Sprintf("verifying %s features failed (exit code %d): %s", e.Name(), out.ExitCode, LastLine(out.Stderr+"\n"+out.Stdout))
	}
	if missing := engine.Missing(svc.Features, parse(out.Stdout)); len(missing) > 0 {
		return fmt.Sprintf("%s features missing after activation: %s (image %s)", e.Name(), strings.Join(missing, ", "), svc.Image())
	}
	return ""
}

// Seeding is where a service's seed is.
type Seeding struct {
	// Running: the scripts run; Progress says which, for how long.
	Running  bool
	Progress string
	// Poll is when to look again while it runs (see Poll).
	Poll time.Duration
	// Failed is the failing key and its first error line; CutShort says an
	// earlier run on the container ended unfinished (cancelled, killed with
	// its runner), so its data is in doubt.
	Failed   string
	CutShort bool
}

// Seed starts the service's init scripts on c, once per container, as a step
// beside the pass, or observes them: a pass calls it until it answers a seed
// that is not Running.
func (h *Host) Seed(ctx context.Context, svc Service, c dd.Container, addr string) Seeding {
	es := engine.Seed(svc.Engine, svc.Password, addr, svc.Init, svc.InitPerScript, svc.InitTimeout)
	st, err := h.runStep(ctx, c.ID, engineStep("seed", es))
	switch {
	case err != nil:
		return Seeding{Failed: fmt.Sprintf("running the init scripts: %v", err)}
	case st.Phase == step.Running:
		return Seeding{Running: true, Progress: seedProgress(st, len(svc.Init)), Poll: Poll(st.Elapsed)}
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

func (h *Host) exec(ctx context.Context, c dd.Container, step engine.Step) (dd.ExecResult, error) {
	return h.driver.Exec(ctx, c.ID, dd.ExecSpec{Cmd: step.Argv, Env: step.Env, Timeout: step.Timeout})
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
