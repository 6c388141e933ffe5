package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// act takes one tenant action, chosen at random (by weight) among those the
// run allows (tn.kinds) that apply; kind, when not "", is the one taken.
func (tn *tenant) act(ctx context.Context, kind string) (string, string, error) {
	live, err := tn.live(ctx)
	if err != nil {
		return "look", "", err
	}
	var pick *sandboxv1.Sandbox
	if len(live) > 0 {
		pick = live[tn.rnd.IntN(len(live))]
	}
	var can []tenantAction
	total := 0
	for _, a := range tenantActions {
		switch {
		case a.live && pick == nil, kind != "" && a.kind != kind:
			// no Sandbox to act on, or not the kind asked for
		case kind != "":
			return a.do(ctx, tn, pick)
		case tn.kinds != nil && !slices.Contains(tn.kinds, a.kind), a.kind == "create" && len(live) >= tenantMaxLive:
			// not this run's, or enough Sandboxes live
		default:
			can, total = append(can, a), total+a.weight
		}
	}
	k := tn.rnd.IntN(max(1, total))
	for _, a := range can {
		if k -= a.weight; k < 0 {
			return a.do(ctx, tn, pick)
		}
	}
	return "none", "", nil
}

// tenantAction is a kind of tenant action and how often it is picked; live:
// it acts on one of the tenant's live Sandboxes (do is given it).
type tenantAction struct {
	kind   string
	weight int
	live   bool
	do     func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (kind, target string, err error)
}

var tenantActions = []tenantAction{
	{kind: "create", weight: 4, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		return "create", "", tn.create(ctx, "")
	}},
	// Only as a planted run's first action (weight 0).
	{kind: "create-seeded", do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		return "create-seeded", "", tn.create(ctx, "seeded")
	}},
	{kind: "claim", weight: 1, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		return "claim", "", tn.create(ctx, "claim")
	}},
	// An orchestrator that keeps as many agents as its quota allows: the
	// oldest goes when the quota is full, else a new one claims.
	{kind: "turnover", weight: 1, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		return tn.turnover(ctx)
	}},
	{kind: "delete", weight: 2, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		return "delete", sb.Name, tn.delete(ctx, sb)
	}},
	{kind: "reuse-agent", weight: 1, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		target, err := tn.reuseAgent(ctx, sb)
		return "reuse-agent", target, err
	}},
	{kind: "memory", weight: 4, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		return "memory", sb.Name, tn.edit(ctx, sb, tn.memory)
	}},
	{kind: "grow", weight: 1, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		return "grow", sb.Name, tn.edit(ctx, sb, grow)
	}},
	{kind: "services", weight: 3, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		return "services", sb.Name, tn.edit(ctx, sb, tn.services)
	}},
	{kind: "data", weight: 2, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		return "data", sb.Name, tn.edit(ctx, sb, tn.data)
	}},
	{kind: "network", weight: 1, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		return "network", sb.Name, tn.edit(ctx, sb, tn.network)
	}},
	{kind: "pool-replicas", weight: 2, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		n := int32(tn.rnd.IntN(4))
		return "pool-replicas", fmt.Sprintf("%s to %d", tenantPool().Name, n), tn.scalePool(ctx, n)
	}},
	{kind: "cordon", weight: 1, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		on := tn.rnd.IntN(2) == 0
		return map[bool]string{true: "cordon", false: "uncordon"}[on], tn.r.w.host, tn.cordon(ctx, on)
	}},
	{kind: "host-delete", weight: 1, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		return "host-delete", tn.r.w.host, tn.hostDelete(ctx)
	}},
	{kind: "quota", weight: 1, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		target, err := tn.editQuota(ctx)
		return "quota", target, err
	}},
	{kind: "capacity", weight: 1, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		target, err := tn.editCapacity(ctx, false)
		return "capacity", target, err
	}},
	{kind: "capacity-tight", do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		target, err := tn.editCapacity(ctx, true)
		return "capacity-tight", target, err
	}},
	{kind: "policy", weight: 1, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		kind, err := tn.policy(ctx)
		return kind, tn.r.w.ns, err
	}},
	seedAction("seed-bad-key", 1), seedAction("seed-fix", 2), seedAction("seed-script", 1), seedAction("seed-delete", 1),
	seedAction("seed-slow", 1),
	{kind: "strip-finalizer", weight: 1, live: true, do: func(ctx context.Context, tn *tenant, sb *sandboxv1.Sandbox) (string, string, error) {
		return "strip-finalizer", sb.Name, tn.strip(ctx, sb)
	}},
	{kind: "remove-container", weight: 2, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		name, err := tn.removeContainer(ctx)
		return "remove-container", name, err
	}},
}

// create makes a Sandbox of one or two services, each with a random memory
// limit; a redis service is seeded from the tenant's ConfigMap half the time,
// a redis-only one claims from the tenant's pool half the time. how "seeded":
// a seeded redis, always; "claim": a claim, always.
func (tn *tenant) create(ctx context.Context, how string) error {
	tn.n++
	sb := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t-%d", tn.n), Namespace: tn.r.w.ns},
		Spec: sandboxv1.SandboxSpec{AgentID: fmt.Sprintf("t%s-%d", tn.r.h.id, tn.n),
			Owner:     &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Placement: sandboxv1.Placement{DockerHost: tn.r.w.host},
			Pools:     &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyNever}},
	}
	engines := [][]string{{"redis"}, {"postgres"}, {"redis", "postgres"}}[tn.rnd.IntN(3)]
	for _, e := range engines {
		sb.Spec.Services = append(sb.Spec.Services, tn.service(e))
	}
	switch {
	case how == "seeded":
		sb.Spec.Services = []sandboxv1.ServiceSpec{tn.service("redis")}
		sb.Spec.Services[0].Init = &sandboxv1.ServiceInit{ConfigMapRef: &sandboxv1.LocalRef{Name: tenantSeedConfigMap}}
	case how == "claim" || len(engines) == 1 && engines[0] == "redis" && tn.rnd.IntN(2) == 0:
		// A claim from the tenant's pool when it has a member ready.
		sb.Spec.Services = []sandboxv1.ServiceSpec{tenantPool().Spec.Service}
		sb.Spec.Pools = &sandboxv1.PoolSelection{Policy: sandboxv1.PoolPolicyAuto}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return tn.k8s.Create(cctx, sb)
}

// turnover deletes the oldest live Sandbox when as many live as the quota
// allows, else makes one that claims.
func (tn *tenant) turnover(ctx context.Context) (string, string, error) {
	live, err := tn.live(ctx)
	if err != nil {
		return "turnover", "", err
	}
	slices.SortFunc(live, func(a, b *sandboxv1.Sandbox) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	if len(live) >= tenantQuotaSandboxes {
		return "turnover-delete", live[0].Name, tn.delete(ctx, live[0])
	}
	return "turnover-claim", "", tn.create(ctx, "claim")
}

// service is a service of engine with a random memory limit (a redis one
// seeded half the time).
func (tn *tenant) service(engine string) sandboxv1.ServiceSpec {
	s := sandboxv1.ServiceSpec{Engine: sandboxv1.Engine(engine),
		Resources: &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse(tenantMemories[tn.rnd.IntN(len(tenantMemories))]))}}
	if engine == "redis" && tn.rnd.IntN(2) == 0 {
		s.Init = &sandboxv1.ServiceInit{ConfigMapRef: &sandboxv1.LocalRef{Name: tenantSeedConfigMap}}
	}
	return s
}

func (tn *tenant) delete(ctx context.Context, sb *sandboxv1.Sandbox) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := tn.k8s.Delete(cctx, sb)
	if err == nil {
		tn.mu.Lock()
		tn.deleted[string(sb.UID)] = time.Now()
		tn.mu.Unlock()
	}
	return client.IgnoreNotFound(err)
}

// edit changes sb's spec with change, read afresh on a conflict.
func (tn *tenant) edit(ctx context.Context, sb *sandboxv1.Sandbox, change func(*sandboxv1.SandboxSpec)) error {
	for range 5 {
		cur := &sandboxv1.Sandbox{}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := tn.k8s.Get(cctx, client.ObjectKeyFromObject(sb), cur)
		if err == nil {
			change(&cur.Spec)
			err = tn.k8s.Update(cctx, cur)
		}
		cancel()
		if !apierrors.IsConflict(err) {
			return client.IgnoreNotFound(err)
		}
	}
	return errors.New("conflicts on every try")
}

// memory grows or shrinks one service's memory limit.
func (tn *tenant) memory(s *sandboxv1.SandboxSpec) {
	i := tn.rnd.IntN(len(s.Services))
	s.Services[i].Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse(tenantMemories[tn.rnd.IntN(len(tenantMemories))]))}
}

// grow makes a Sandbox take more: a service's memory limit to the largest
// the tenant asks, or, when both are there already, the engine a
// one-service Sandbox lacks, at that limit (a Sandbox at its most is left).
func grow(s *sandboxv1.SandboxSpec) {
	most := resource.MustParse(tenantMemories[len(tenantMemories)-1])
	for i, svc := range s.Services {
		if svc.Resources == nil || svc.Resources.Memory == nil || svc.Resources.Memory.Cmp(most) < 0 {
			s.Services[i].Resources = &sandboxv1.ServiceResources{Memory: &most}
			return
		}
	}
	if len(s.Services) == 1 {
		other := map[sandboxv1.Engine]sandboxv1.Engine{"redis": "postgres", "postgres": "redis"}[s.Services[0].Engine]
		s.Services = append(s.Services, sandboxv1.ServiceSpec{Engine: other, Resources: &sandboxv1.ServiceResources{Memory: &most}})
	}
}

// services adds the engine a one-service Sandbox lacks, or drops one of two.
func (tn *tenant) services(s *sandboxv1.SandboxSpec) {
	if len(s.Services) == 2 {
		i := tn.rnd.IntN(2)
		s.Services = slices.Delete(s.Services, i, i+1)
		return
	}
	other := map[sandboxv1.Engine]string{"redis": "postgres", "postgres": "redis"}[s.Services[0].Engine]
	s.Services = append(s.Services, tn.service(other))
}

// tenantPool is the tenant's warm pool: redis members of 128Mi, which its
// quota counts as they wait and, once claimed, as their Sandbox's.
func tenantPool() *sandboxv1.SandboxPool {
	return &sandboxv1.SandboxPool{ObjectMeta: metav1.ObjectMeta{Name: "warm"},
		Spec: sandboxv1.SandboxPoolSpec{Replicas: ptr.To[int32](1), Service: sandboxv1.ServiceSpec{Engine: sandboxv1.EngineRedis,
			Resources: &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("128Mi"))}}}}
}

// scalePool sets the tenant's pool's replicas.
func (tn *tenant) scalePool(ctx context.Context, n int32) error {
	p := &sandboxv1.SandboxPool{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tn.k8s.Get(cctx, client.ObjectKey{Namespace: tn.r.w.ns, Name: tenantPool().Name}, p); err != nil {
		return err
	}
	p.Spec.Replicas = &n
	return tn.k8s.Update(cctx, p)
}

// dataActions are what the tenant's data requests ask.
var dataActions = []sandboxv1.DataAction{sandboxv1.DataCheckpoint, sandboxv1.DataRestore, sandboxv1.DataReset, sandboxv1.DataDeleteCheckpoint}

// data asks for a checkpoint, a restore, a reset or a deletion under one of
// three ids, of one of three checkpoints (latest, a, b): an id reused with
// another action or name is another request, with the same ones it is the
// request already done.
func (tn *tenant) data(s *sandboxv1.SandboxSpec) {
	req := &sandboxv1.DataRequest{ID: "d" + strconv.Itoa(tn.rnd.IntN(3)), Action: dataActions[tn.rnd.IntN(len(dataActions))]}
	if req.Action != sandboxv1.DataReset {
		req.Name = []string{"", "a", "b"}[tn.rnd.IntN(3)]
	}
	s.Data = req
}

// network moves the Sandbox to the run's network, to one that does not
// exist, or back to the default.
func (tn *tenant) network(s *sandboxv1.SandboxSpec) {
	s.Network = []string{"", tn.r.instance + "-net", tn.r.instance + "-missing"}[tn.rnd.IntN(3)]
}
