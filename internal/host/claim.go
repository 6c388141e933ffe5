package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
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
	// Stale: the host was given up since the member was taken (another
	// replica may have given it to a Sandbox): nothing was done to it.
	Stale bool
	// Renamed: the member holds the service's name (even when a later step failed).
	Renamed bool
	// Rotating: its rotation runs on, beside the pass; look again at Poll
	// (the service's probe fails until it ends, and its recovery observes it).
	Rotating bool
	Poll     time.Duration
}

// Claim makes member m serve svc: renamed to the service's container name
// (atomic, and Docker keeps names unique, so no two Sandboxes can hold one
// member), then, unless svc's password is the member's own (its Secret was
// made with it), its password rotated to svc's and proven by a login.
// The caller records the claim before calling (see docs/pools.md).
func (h *Host) Claim(ctx context.Context, svc Service, m Member) (Claimed, error) {
	defer h.warm.release(m.ID)
	var out Claimed
	if !h.warm.Current(m.Epoch) {
		out.Stale = true
		return out, nil
	}
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
		rot := h.Rotate(ctx, svc, m.ID, m.Password, m.Address)
		if rot.Failed != "" {
			return out, errors.New(rot.Failed)
		}
		out.Rotating, out.Poll = rot.Running, rot.Poll
		if !rot.Running {
			chaosplant.CrashAfter(chaosplant.AfterClaimRotated)
		}
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

// Rotation is where a rotation is.
type Rotation struct {
	// Running: its step runs; look again at Poll (its end wakes the object before).
	Running bool
	Poll    time.Duration
	// Failed is what went wrong ("": rotated, and proven by a login).
	Failed string
}

// Rotate switches a claimed member's credentials from its own password to
// svc's and proves them, as a step beside the pass (mongosh's start alone
// takes seconds): a pass calls it until it answers a rotation that is not
// Running. It is idempotent, and each call after one that ended runs it
// again (a fresh proof). The passwords reach the step on its stdin (a
// launched prepared exec), never in argv or an exec's inspectable environment.
func (h *Host) Rotate(ctx context.Context, svc Service, id, memberPassword, addr string) Rotation {
	es := svc.Engine.Rotate(addr)
	es.Env = maps.Clone(es.Env)
	if es.Env == nil {
		es.Env = map[string]string{}
	}
	maps.Copy(es.Env, engine.RotateEnv(svc.Engine, memberPassword, svc.Password))
	s := engineStep("rotate", es)
	st, err := h.runStep(ctx, id, s)
	if err == nil && st.Earlier && st.Ended() {
		// Note: an earlier call's run proves nothing now: forgotten, run again.
		if _, err = h.steps.Forget(ctx, id, s.Key()); err == nil {
			st, err = h.steps.Start(ctx, id, s)
		}
	}
	switch {
	case err != nil:
		return Rotation{Failed: fmt.Sprintf("rotating the credentials of %s: %v", svc.Container.Name, err)}
	case st.Phase == step.Running:
		return Rotation{Running: true, Poll: Poll(st.Elapsed)}
	}
	h.started.drop(id, s.Key())
	if st.Phase != step.Done {
		return Rotation{Failed: fmt.Sprintf("rotating the credentials of %s failed (exit code %d): %s",
			svc.Container.Name, st.ExitCode, st.Message)}
	}
	return Rotation{}
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
