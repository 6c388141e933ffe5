package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The tenant mode's invariants, checked on each sample.

// checkQuota: what runs never takes more than the quota's hard amounts (a
// pool member's memory counts, claimed or not; Sandboxes count, members not).
func (tn *tenant) checkQuota(cs []tenantContainer) {
	mem, sbs, _ := runningTotals(cs)
	tn.mu.Lock()
	msg := tn.quota.excess(mem, sbs, "Sandboxes")
	tn.mu.Unlock()
	if msg != "" {
		tn.r.violate(invQuota, msg)
	}
}

// checkHost: what runs on the run's host never takes more than its capacity:
// memory, and Sandboxes and unclaimed pool members together.
func (tn *tenant) checkHost(cs []tenantContainer) {
	mem, sbs, members := runningTotals(cs)
	tn.mu.Lock()
	msg := tn.capacity.excess(mem, sbs+members, "Sandboxes and pool members")
	tn.mu.Unlock()
	if msg != "" {
		tn.r.violate(invHost, tn.r.w.host+": "+msg)
	}
}

// runningTotals sums the memory of cs's running containers, and counts the
// Sandboxes they serve and the unclaimed pool members among them.
func runningTotals(cs []tenantContainer) (mem int64, sandboxes, members int) {
	uids := map[string]bool{}
	for _, c := range cs {
		if !c.running {
			continue
		}
		mem += c.memory
		if c.uid == "" {
			members++
		} else {
			uids[c.uid] = true
		}
	}
	return mem, len(uids), members
}

// checkDeadReady: a Sandbox Ready for longer than the bound while a service
// its status reports has no running container. (A service the quota keeps
// from being made is not reported: a refused growth leaves the Sandbox Ready
// as it runs.)
func (tn *tenant) checkDeadReady(sbs map[string]*sandboxv1.Sandbox, cs []tenantContainer) {
	running := map[string]bool{}
	for _, c := range cs {
		if c.running {
			running[c.uid+"/"+c.engine] = true
		}
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	seen := map[string]bool{}
	for _, sb := range sbs {
		if sb.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1.ConditionReady) {
			continue
		}
		for _, svc := range sb.Status.Services {
			key := string(sb.UID) + "/" + string(svc.Engine)
			if running[key] || svc.ContainerID == "" {
				continue
			}
			seen[key] = true
			since, ok := tn.deadSince[key]
			if !ok {
				tn.deadSince[key] = time.Now()
			} else if time.Since(since) > deadReadyBound {
				tn.r.violate(invDeadReady, fmt.Sprintf("%s is Ready=True, its %s has had no running container for %s",
					sb.Name, svc.Engine, time.Since(since).Round(time.Second)))
				tn.deadSince[key] = time.Now() // said once per bound
			}
		}
	}
	for key := range tn.deadSince {
		if !seen[key] {
			delete(tn.deadSince, key)
		}
	}
}

// checkGone: a deleted Sandbox still there past the run's bound (at the last
// look, after the run settled: still there at all).
func (tn *tenant) checkGone(sbs map[string]*sandboxv1.Sandbox, last bool) {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	present := map[string]*sandboxv1.Sandbox{}
	for _, sb := range sbs {
		present[string(sb.UID)] = sb
	}
	for uid, at := range tn.deleted {
		sb, there := present[uid]
		switch {
		case !there:
			delete(tn.deleted, uid)
		case time.Since(at) > tn.r.s.bound || last:
			tn.r.violate(invGone, fmt.Sprintf("%s deleted %s ago is still there (finalizers %v)", sb.Name,
				time.Since(at).Round(time.Second), sb.Finalizers))
			delete(tn.deleted, uid) // said once
		}
	}
}

// tenantContainer is a service container of the run, with its memory limit.
type tenantContainer struct {
	id, uid, engine string
	running         bool
	memory          int64
}

// tenantContainers lists the run's containers with their memory: each
// service's, with its Sandbox's uid, a member claimed by one of sbs with the
// claimant's, an unclaimed pool member with none.
func (h *harness) tenantContainers(ctx context.Context, instance string, sbs map[string]*sandboxv1.Sandbox) ([]tenantContainer, error) {
	cs, err := h.containers(ctx, instance)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	claimantsOf(sbs).attribute(cs)
	args := []string{"inspect", "--format", "{{.Id}}|{{.HostConfig.Memory}}|{{.State.Running}}"}
	for _, c := range cs {
		args = append(args, c.id)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// Note: a container removed between the list and the inspect is "No such
	// object" beside the others' lines: gone, it runs nothing.
	out, err := h.daemon.Docker(cctx, args...)
	if err != nil && !strings.Contains(out, "No such object") {
		return nil, err
	}
	byID := map[string]container{}
	for _, c := range cs {
		byID[c.id] = c
	}
	var res []tenantContainer
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		c, ok := byID[f[0]]
		if len(f) != 3 || !ok {
			continue
		}
		mem, _ := strconv.ParseInt(f[1], 10, 64)
		res = append(res, tenantContainer{id: c.id, uid: c.uid, engine: c.engine, running: f[2] == "true", memory: mem})
	}
	return res, nil
}
