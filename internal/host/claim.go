package host

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// Claimable says whether a pool member can serve svc: one more DNS alias than
// the container name needs a network move, which claims do not make.
func Claimable(svc Service) bool {
	for _, a := range svc.Container.Aliases {
		if a != svc.Container.Name {
			return false
		}
	}
	return true
}

// Claimed is what Claim achieved.
type Claimed struct {
	// Container is the claimed member, renamed and rotated.
	Container dd.Container
	// Taken is set when the service's name is held by another container.
	Taken *dd.ConflictError
	// Renamed: the member holds the service's name (even when a later step failed).
	Renamed bool
}

// Claim makes member m serve svc: renamed to the service's container name
// (atomic, and Docker keeps names unique, so no two Sandboxes can hold one
// member), then, unless svc's password is the member's own (its Secret was
// made with it), its password rotated to svc's and proven by a login.
// The caller records the claim before calling (see docs/pools.md).
func (h *Host) Claim(ctx context.Context, svc Service, m Member) (Claimed, error) {
	defer h.warm.release(m.ID)
	var out Claimed
	err := h.driver.Rename(ctx, m.ID, svc.Container.Name)
	if errors.As(err, &out.Taken) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("renaming pool member %s: %w", m.Name, err)
	}
	out.Renamed = true
	chaosplant.CrashAfter(chaosplant.AfterClaimRenamedNoSecret)
	if svc.Password != m.Password {
		if detail := h.Rotate(ctx, svc, m.ID, m.Password, m.Address); detail != "" {
			return out, errors.New(detail)
		}
		chaosplant.CrashAfter(chaosplant.AfterClaimRotated)
	}
	out.Container = claimedContainer(svc, m)
	return out, nil
}

// claimedContainer is member m as it serves svc, from what its pool's probe
// saw (a rename changes neither its state nor its address; no inspect needed).
func claimedContainer(svc Service, m Member) dd.Container {
	network := svc.Network
	if network == "" {
		network = "bridge"
	}
	return dd.Container{ID: m.ID, Name: svc.Container.Name, State: dd.StateRunning,
		Networks: map[string]dd.Endpoint{network: {IPAddress: m.Address}}}
}

// Rotate switches a claimed member's credentials from its own password to svc's
// and proves them, once or again (it is idempotent); it returns what went wrong,
// or "". The passwords reach the step on its stdin (a prepared exec), never in
// argv or an exec's inspectable environment.
func (h *Host) Rotate(ctx context.Context, svc Service, id, memberPassword, addr string) string {
	step := svc.Engine.Rotate(addr)
	p, err := h.driver.PrepareExec(ctx, id, dd.ExecSpec{Cmd: step.Argv, Env: step.Env, Timeout: step.Timeout})
	out := dd.ExecResult{}
	if err == nil {
		out, err = p.Run(ctx, engine.RotateEnv(svc.Engine, memberPassword, svc.Password))
	}
	switch {
	case err != nil:
		return fmt.Sprintf("rotating the credentials of %s: %v", svc.Container.Name, err)
	case !step.Passed(out.ExitCode, out.Stdout):
		return fmt.Sprintf("rotating the credentials of %s failed (exit code %d): %s",
			svc.Container.Name, out.ExitCode, LastLine(out.Stderr+"\n"+out.Stdout))
	}
	return ""
}

// judgeClaimed judges a claimed member (it carries its pool's labels, not the
// Sandbox's): by its name, the claim record's credentials, and what Docker
// reports it was made with, credentials and aliases aside.
func (h *Host) judgeClaimed(ctx context.Context, svc Service, c *dd.ContainerSummary) (judgement, error) {
	want := svc.Container
	if c.Name != want.Name {
		return judgement{replace: true, why: "named " + c.Name + ", not " + want.Name}, nil
	}
	if svc.Claims[c.ID] != want.Labels[LabelCredentials] {
		return judgement{replace: true, why: "credentials changed"}, nil
	}
	if c.Labels[LabelClass] == ClassHash(want) {
		return judgement{}, nil
	}
	as := svc
	as.Container.Aliases = nil
	as.Container.Labels = maps.Clone(want.Labels)
	as.Container.Labels[LabelCredentials] = c.Labels[LabelCredentials]
	return h.judgeMade(ctx, as, c)
}
