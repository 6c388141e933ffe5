package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// The run's warm pools: one per engine (mongo in long runs), pinned to the main
// host. Half the workload's Sandboxes claim from them.
const poolReplicas = 2

// The pool invariants.
const (
	invShared     = "no member serves two Sandboxes"
	invMemberLeak = "no member leaks"
)

func (w *workload) poolEngines() []string {
	if w.mongo {
		return []string{"postgres", "redis", "mongo"}
	}
	return []string{"postgres", "redis"}
}

// createPools makes the run's pools.
func (w *workload) createPools(ctx context.Context) error {
	if !w.pools {
		return nil
	}
	for _, e := range w.poolEngines() {
		p := &sandboxv1.SandboxPool{ObjectMeta: metav1.ObjectMeta{Name: "pool-" + e, Namespace: w.ns},
			Spec: sandboxv1.SandboxPoolSpec{Replicas: ptr.To(int32(poolReplicas)), Service: sandboxv1.ServiceSpec{Engine: sandboxv1.Engine(e)},
				Placement: sandboxv1.Placement{DockerHost: w.host}}}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := w.h.k8s.Create(cctx, p)
		cancel()
		if err != nil {
			return fmt.Errorf("creating pool %s: %w", p.Name, err)
		}
	}
	return nil
}

// livePools are the UIDs of the namespace's pools.
func (w *workload) livePools(ctx context.Context) (map[string]bool, error) {
	var list sandboxv1.SandboxPoolList
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.h.k8s.List(cctx, &list, client.InNamespace(w.ns)); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[string(p.UID)] = true
		}
	}
	return out, nil
}

// claimants maps each container a Sandbox's status records (a claim, or the
// container serving a service) to the Sandboxes that record it.
type claimants struct {
	claims  map[string][]string // member ID → Sandboxes whose claim record names it
	serving map[string][]string // container ID → Sandboxes whose status says it serves them
	owner   map[string]claimOf  // member ID → the claim
}

type claimOf struct {
	uid, engine, credentials string
}

func claimantsOf(sbs map[string]*sandboxv1.Sandbox) claimants {
	c := claimants{claims: map[string][]string{}, serving: map[string][]string{}, owner: map[string]claimOf{}}
	for _, name := range slices.Sorted(maps.Keys(sbs)) {
		sb := sbs[name]
		for engine, rec := range sb.Status.Claims {
			c.claims[rec.ContainerID] = append(c.claims[rec.ContainerID], name)
			c.owner[rec.ContainerID] = claimOf{uid: string(sb.UID), engine: engine, credentials: rec.Credentials}
		}
		for _, svc := range sb.Status.Services {
			if svc.ContainerID != "" {
				c.serving[svc.ContainerID] = append(c.serving[svc.ContainerID], name)
			}
		}
	}
	return c
}

// attribute gives each claimed member its Sandbox (UID, and the credentials it
// was rotated to), so that the other invariants judge it as the Sandbox's
// container. Unclaimed members keep an empty UID.
func (c claimants) attribute(cs []container) {
	for i := range cs {
		if cs[i].pool == "" {
			continue
		}
		if o, ok := c.owner[cs[i].id]; ok && len(c.claims[cs[i].id]) == 1 {
			cs[i].uid, cs[i].credentials = o.uid, o.credentials
		}
	}
}

// shared names the containers two Sandboxes record, by claim or as serving them.
func (c claimants) shared() []string {
	var out []string
	for id, names := range c.claims {
		if len(names) > 1 {
			out = append(out, fmt.Sprintf("member %s is recorded as claimed by %v", short(id), names))
		}
	}
	for id, names := range c.serving {
		if len(names) > 1 {
			out = append(out, fmt.Sprintf("container %s serves %v", short(id), names))
		}
	}
	sort.Strings(out)
	return out
}

// memberLeaks names the members nothing accounts for: a member no live pool
// has, a claimed one (renamed to a service's name) no Sandbox records, or
// more unclaimed members of a pool than it keeps.
func memberLeaks(cs []container, pools map[string]bool) []string {
	var out []string
	unclaimed := map[string][]string{}
	for _, c := range cs {
		switch {
		case c.pool == "" || c.uid != "" || c.setAside():
		case !host.IsMemberName(c.name):
			out = append(out, fmt.Sprintf("%s (%s, member of pool %s) serves a name no Sandbox records it for", c.name, c.state, c.pool))
		case !pools[c.pool]:
			out = append(out, fmt.Sprintf("%s (%s) is a member of pool %s, which is gone", c.name, c.state, c.pool))
		default:
			unclaimed[c.pool] = append(unclaimed[c.pool], c.name)
		}
	}
	for pool, names := range unclaimed {
		if len(names) > poolReplicas {
			out = append(out, fmt.Sprintf("pool %s keeps %d unclaimed members, wants %d: %v", pool, len(names), poolReplicas, names))
		}
	}
	sort.Strings(out)
	return out
}

func short(id string) string { return id[:min(12, len(id))] }

// attributed lists the run's containers with each claimed member given its
// Sandbox, as the invariants judge them.
func (r *run) attributed(ctx context.Context) ([]container, error) {
	cs, err := r.h.containers(ctx, r.instance)
	if err != nil {
		return nil, err
	}
	sbs, err := r.w.sandboxes(ctx)
	if err != nil {
		return nil, err
	}
	claimantsOf(sbs).attribute(cs)
	return cs, nil
}
