package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// The kinds of fault.
const (
	faultManagerKill = "manager-sigkill"
	faultDockerd     = "dockerd-restart"
	faultStall       = "docker-api-stall"
	faultDrop        = "docker-api-drop"
	faultAPIServer   = "apiserver-restart"
	faultSecret      = "secret-delete"
	faultContainer   = "container-remove"
	faultHostSwap    = "host-swap"
	faultUpdate      = "plain-update"
	faultForge       = "forged-claim-record"
	faultEndpoint    = "endpoint-switch"
	faultLease       = "lease-handover"
)

// allFaults are the kinds every run injects; host-swap joins them once the
// manager binds Sandboxes to a proven Docker host (status.dockerHost).
func allFaults() []string {
	kinds := []string{faultManagerKill, faultDockerd, faultStall, faultDrop, faultAPIServer, faultSecret, faultContainer,
		faultUpdate, faultForge, faultEndpoint, faultLease, faultDataCut}
	if hostIdentitySupported() {
		kinds = append(kinds, faultHostSwap)
	}
	return kinds
}

func hostIdentitySupported() bool {
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "crd", "bases", "sandbox.roboco.io_sandboxes.yaml"))
	return err == nil && strings.Contains(string(b), "dockerHost:")
}

// schedule is the fault of each cycle: every kind once per round, in a seeded
// random order, so a run of n cycles injects each kind about n/len(kinds) times.
func schedule(r *rand.Rand, kinds []string, cycles int) []string {
	var out []string
	for len(out) < cycles {
		round := append([]string(nil), kinds...)
		r.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		out = append(out, round...)
	}
	return out[:cycles]
}

// between is a random duration in [lo, hi).
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// inject runs one fault to its end and says what it explains.
func (r *run) inject(ctx context.Context, c *cycle) error {
	rnd := r.faultRand
	switch c.fault {
	case faultManagerKill:
		// Note: the replica driving the main host, whose work is cut short.
		i, err := r.mainHolder(ctx)
		if err != nil {
			return err
		}
		c.target = fmt.Sprintf("replica %d", i)
		r.mgrs[i].kill(between(rnd, 0, 3*time.Second))
	case faultDockerd:
		c.cause.all = true
		return r.restartDockerd(between(rnd, 3*time.Second, 15*time.Second))
	case faultStall:
		d := between(rnd, 5*time.Second, 20*time.Second)
		r.h.proxy.stall(d)
		sleep(ctx, d)
	case faultDrop:
		d := between(rnd, time.Second, 8*time.Second)
		r.h.proxy.drop(d)
		sleep(ctx, d)
	case faultAPIServer:
		if err := r.h.plane.stopAPIServer(); err != nil {
			return err
		}
		sleep(ctx, between(rnd, 2*time.Second, 10*time.Second))
		return r.h.plane.startAPIServer()
	case faultSecret:
		return r.deleteSecret(ctx, c, rnd)
	case faultContainer:
		return r.removeContainer(ctx, c, rnd)
	case faultHostSwap:
		c.cause.all = true
		return r.swapHost(ctx, between(rnd, 20*time.Second, 40*time.Second))
	case faultUpdate:
		return r.plainUpdate(ctx, c, rnd)
	case faultForge:
		return r.forgeRecord(ctx, c, rnd)
	case faultEndpoint:
		return r.switchEndpoint(ctx, c, between(rnd, 10*time.Second, 25*time.Second))
	case faultLease:
		return r.handLease(ctx, c)
	case faultDataCut:
		return r.cutData(ctx, c, rnd)
	default:
		return fmt.Errorf("no fault %q", c.fault)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// restartDockerd stops the suite's dockerd (its containers stop with it), keeps it
// down for down, and starts it again; it measures the Docker calls the manager
// makes meanwhile.
func (r *run) restartDockerd(down time.Duration) error {
	r.h.daemon.Stop()
	before, t0 := r.h.proxy.worked(), time.Now()
	time.Sleep(down)
	calls, took := r.h.proxy.worked()-before, time.Since(t0)
	if n := len(r.w.records()); n > 0 {
		r.stats.downRates = append(r.stats.downRates, float64(calls)/took.Minutes()/float64(n))
	}
	if err := r.h.daemon.Start(r.h.daemon.DataRoot); err != nil {
		return err
	}
	r.h.startStoppedOwners(context.Background())
	return nil
}

// deleteSecret deletes a random live Sandbox's Secret, as a user might.
func (r *run) deleteSecret(ctx context.Context, c *cycle, rnd *rand.Rand) error {
	recs := r.w.records()
	if len(recs) == 0 {
		return nil
	}
	rec := recs[rnd.IntN(len(recs))]
	rec.rotating = true
	c.target = rec.name
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := r.h.k8s.Delete(cctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.w.ns, Name: rec.name + "-sandbox"}})
	if err != nil {
		c.target += " (" + err.Error() + ")"
	}
	return nil
}

// removeContainer removes a random service container out of band (docker rm -fv).
// A claimed member carries its pool's labels, not its Sandbox's UID: it is
// attributed first, or its removal would explain nothing.
func (r *run) removeContainer(ctx context.Context, c *cycle, rnd *rand.Rand) error {
	cs, err := r.attributed(ctx)
	if err != nil || len(cs) == 0 {
		return err
	}
	victim := cs[rnd.IntN(len(cs))]
	c.cause.services[victim.uid+"/"+victim.engine] = true
	c.target = victim.name
	_, err = r.h.daemon.Docker(ctx, "rm", "-fv", victim.id)
	return err
}

// swapHost puts another Docker host behind the manager's socket for hold (the
// node the manager was rescheduled to), then the suite's own again. The Sandboxes
// are bound to the suite's host: on the other one nothing may be created or
// removed for them. The workload pauses meanwhile, and the swap waits until every
// Sandbox is bound: one the manager first reaches on the other host is rightly
// bound there (the fault is a reschedule after placement, not before it).
func (r *run) swapHost(ctx context.Context, hold time.Duration) error {
	r.w.ops.Lock()
	defer r.w.ops.Unlock()
	if err := r.waitBound(ctx, r.s.bound); err != nil {
		return err
	}
	if err := r.h.daemon.restart(r.h.daemon.altRoot); err != nil {
		return err
	}
	r.h.proxy.take() // what the manager does on the other host, from here
	sleep(ctx, hold)
	calls, creates := r.h.proxy.take()
	acted := mutations(calls)
	cs, err := r.h.containers(ctx, r.instance)
	if err == nil && len(cs) > 0 {
		acted = append(acted, fmt.Sprintf("%d containers of the Sandboxes made there", len(cs)))
		for _, c := range cs {
			_, _ = r.h.daemon.Docker(ctx, "rm", "-fv", c.id)
		}
	}
	if len(acted) > 0 {
		r.violate(invForeign, fmt.Sprintf("while the manager talked to another Docker host: %s (creates by name: %v)", strings.Join(acted, ", "), creates))
	}
	if err := r.h.daemon.restart(r.h.daemon.DataRoot); err != nil {
		return err
	}
	r.h.startStoppedOwners(ctx)
	return nil
}

// waitBound waits until every Sandbox not being deleted records its Docker host.
func (r *run) waitBound(ctx context.Context, limit time.Duration) error {
	var unbound []string
	for deadline := time.Now().Add(limit); ; {
		sbs, err := r.w.sandboxes(ctx)
		unbound = unbound[:0]
		for name, sb := range sbs {
			if sb.DeletionTimestamp == nil && sb.Status.DockerHost == nil {
				unbound = append(unbound, name)
			}
		}
		if err == nil && len(unbound) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil {
				return fmt.Errorf("listing Sandboxes to see them bound to a Docker host: %w", err)
			}
			return fmt.Errorf("Sandboxes not bound to a Docker host within %s: %v", limit, unbound)
		}
		sleep(ctx, 200*time.Millisecond)
	}
}
