package chaos

import (
	"context"
	"fmt"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// "No agent reads data it was not given": each Ready Sandbox's redis is
// marked with the Sandbox's UID, through its own Secret's password, and read
// back on later looks; a marker of another Sandbox there is data this agent
// was not given (a container, or a claimed pool member, that served another
// agent). A reset or a restore may take the marker away (it is written
// again); it can never bring another's.
const invGiven = "no agent reads data it was not given"

// givenEvery is how many samples apart the markers are read (an exec each).
const givenEvery = 10

// checkGiven reads and writes the markers of the Ready Sandboxes' redis.
func (tn *tenant) checkGiven(ctx context.Context, sbs map[string]*sandboxv1.Sandbox) {
	keys, _ := sandboxv1.KeysOf(sandboxv1.EngineRedis)
	for _, sb := range sbs {
		if sb.DeletionTimestamp != nil || !ready(sb) {
			continue
		}
		for _, svc := range sb.Status.Services {
			if svc.Engine != sandboxv1.EngineRedis || svc.ContainerID == "" {
				continue
			}
			pw, err := tn.r.passwords(ctx, &record{name: sb.Name})
			if err != nil || pw[keys.Password] == "" {
				continue
			}
			got, err := tn.r.redis(ctx, svc.ContainerID, pw[keys.Password], "GET", markerKey)
			switch {
			case err != nil, got == string(sb.UID):
				continue
			case got != "":
				tn.r.violate(invGiven, fmt.Sprintf("%s's redis %s holds the marker of Sandbox uid %s (%s): data its agent was not given",
					sb.Name, short(svc.ContainerID), got, tn.nameOf(got, sbs)))
			}
			_, _ = tn.r.redis(ctx, svc.ContainerID, pw[keys.Password], "SET", markerKey, string(sb.UID))
		}
	}
}

// nameOf names the Sandbox of uid, if it is still there.
func (tn *tenant) nameOf(uid string, sbs map[string]*sandboxv1.Sandbox) string {
	for _, sb := range sbs {
		if string(sb.UID) == uid {
			return sb.Name
		}
	}
	return "gone"
}

// reuseAgent deletes sb and at once makes a Sandbox of another name with
// its agentID and services (an orchestrator that replaces an agent's
// Sandbox): the new one's names are the old one's until its teardown ends.
func (tn *tenant) reuseAgent(ctx context.Context, sb *sandboxv1.Sandbox) (string, error) {
	if err := tn.delete(ctx, sb); err != nil {
		return sb.Name, err
	}
	tn.n++
	next := &sandboxv1.Sandbox{Spec: *sb.Spec.DeepCopy()}
	next.Namespace, next.Name = sb.Namespace, fmt.Sprintf("t-%d", tn.n)
	next.Spec.Data = nil
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return sb.Name + " as " + next.Name, tn.k8s.Create(cctx, next)
}
