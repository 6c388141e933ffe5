package chaos

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The operator's actions among the tenant's: the host cordoned and
// uncordoned, its capacity set, lowered, raised and unset, the namespace's
// SandboxPolicy made, changed and deleted, its SandboxQuota's hard amounts
// lowered and raised. They act with the suite's admin; what runs stays
// through each of them.

// cordon cordons the run's Docker host, or uncordons it.
func (tn *tenant) cordon(ctx context.Context, on bool) error {
	return tn.editHost(ctx, func(s *sandboxv1.DockerHostSpec) { s.Unschedulable = on })
}

// editHost changes the run's Docker host's spec.
func (tn *tenant) editHost(ctx context.Context, edit func(*sandboxv1.DockerHostSpec)) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h := &sandboxv1.DockerHost{}
	if err := tn.r.h.k8s.Get(cctx, client.ObjectKey{Name: tn.r.w.host}, h); err != nil {
		return err
	}
	edit(&h.Spec)
	return tn.r.h.k8s.Update(cctx, h)
}

// tenantPolicyLabel marks the run's namespace for its SandboxPolicy.
const tenantPolicyLabel = "sandbox.roboco.io/chaos-tenant"

// policy makes, changes or deletes the SandboxPolicy that selects the run's
// namespace: one that allows both of the run's networks, one that allows
// only the one that exists, one whose host selector the run's host does not
// match (placed Sandboxes stay; new ones pinned to the host stall), or none.
func (tn *tenant) policy(ctx context.Context) (string, error) {
	ns := tn.r.w.ns
	p := &sandboxv1.SandboxPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: sandboxv1.SandboxPolicySpec{
		NamespaceSelector: sandboxv1.NamespaceLabels{MatchLabels: map[string]string{tenantPolicyLabel: ns}}}}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var kind string
	switch tn.rnd.IntN(4) {
	case 0:
		return "policy-delete", client.IgnoreNotFound(tn.r.h.k8s.Delete(cctx, p))
	case 1:
		kind, p.Spec.Networks = "policy-networks", []string{tn.r.instance + "-net", tn.r.instance + "-missing"}
	case 2:
		kind, p.Spec.Networks = "policy-one-network", []string{tn.r.instance + "-net"}
	default:
		kind = "policy-other-hosts"
		p.Spec.DockerHostSelector = &metav1.LabelSelector{MatchLabels: map[string]string{tenantPolicyLabel: "no-host-has-this"}}
	}
	cur := &sandboxv1.SandboxPolicy{}
	err := tn.r.h.k8s.Get(cctx, client.ObjectKeyFromObject(p), cur)
	switch {
	case apierrors.IsNotFound(err):
		return kind, tn.r.h.k8s.Create(cctx, p)
	case err != nil:
		return kind, err
	}
	cur.Spec = p.Spec
	return kind, tn.r.h.k8s.Update(cctx, cur)
}

// labelNamespace marks the run's namespace for its SandboxPolicy (a label
// its tenants cannot set).
func (tn *tenant) labelNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{}
	if err := tn.r.h.k8s.Get(ctx, client.ObjectKey{Name: tn.r.w.ns}, ns); err != nil {
		return err
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[tenantPolicyLabel] = tn.r.w.ns
	return tn.r.h.k8s.Update(ctx, ns)
}

// quotaSettle is how long after a change of a quota's hard amounts (or a
// host's capacity) what was admitted before it may still start (a create in
// flight).
const quotaSettle = 15 * time.Second

// tenantLimit is a limit in force (a quota's hard amounts, a host's
// capacity; unset: none), since when, and what ran in the quotaSettle after
// its last change (admitted before it: kept).
type tenantLimit struct {
	set        bool
	memory     resource.Quantity
	units      int
	changed    time.Time
	keptMemory int64
	keptUnits  int
}

// excess says how mem and units running exceed l ("": they do not). A
// lowered limit evicts nothing: what ran when it changed (or was being made,
// quotaSettle after) may go on running; nothing more is admitted until what
// runs fits. Callers hold tn.mu.
func (l *tenantLimit) excess(mem int64, units int, what string) string {
	if !l.set {
		return ""
	}
	if time.Since(l.changed) < quotaSettle {
		l.keptMemory, l.keptUnits = max(l.keptMemory, mem), max(l.keptUnits, units)
	}
	limitMem, limitUnits := max(l.memory.Value(), l.keptMemory), max(l.units, l.keptUnits)
	if mem <= limitMem && units <= limitUnits {
		return ""
	}
	return fmt.Sprintf("%s of memory in %d %s running, %s and %d allowed (now, with what ran when it last changed: %s and %d)",
		resource.NewQuantity(mem, resource.BinarySI), units, what, l.memory.String(), l.units,
		resource.NewQuantity(limitMem, resource.BinarySI), limitUnits)
}

// editQuota sets the tenant's SandboxQuota's hard memory and Sandboxes at
// random: lowered, what runs stays; raised, what waits is admitted.
func (tn *tenant) editQuota(ctx context.Context) (string, error) {
	mem := resource.MustParse([]string{"1Gi", "1536Mi", "2Gi"}[tn.rnd.IntN(3)])
	sbs := []int{3, 5, 6}[tn.rnd.IntN(3)]
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q := &sandboxv1.SandboxQuota{}
	if err := tn.r.h.k8s.Get(cctx, client.ObjectKey{Namespace: tn.r.w.ns, Name: tenantQuotaName}, q); err != nil {
		return "", err
	}
	q.Spec.Hard.Memory, q.Spec.Hard.Sandboxes = &mem, ptr.To(int32(sbs))
	target := fmt.Sprintf("%s to %s and %d Sandboxes", q.Name, mem.String(), sbs)
	if err := tn.r.h.k8s.Update(cctx, q); err != nil {
		return target, err
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.quota = tenantLimit{set: true, memory: mem, units: sbs, changed: time.Now()}
	return target, nil
}

// tightCapacity is a capacity of the run's host below its tenant's quota:
// the host, not the quota, is what holds growth back.
var tightCapacity = sandboxv1.DockerHostCapacity{Memory: ptr.To(resource.MustParse("1Gi")), Sandboxes: ptr.To(int32(4))}

// editCapacity sets the run's host's capacity (tight: tightCapacity; else at
// random, or none): lowered, what runs stays; raised, what waits is placed.
func (tn *tenant) editCapacity(ctx context.Context, tight bool) (string, error) {
	capacity := &tightCapacity
	if !tight {
		capacity = []*sandboxv1.DockerHostCapacity{nil, &tightCapacity,
			{Memory: ptr.To(resource.MustParse("2Gi")), Sandboxes: ptr.To(int32(6))},
			{Memory: ptr.To(resource.MustParse("3Gi")), Sandboxes: ptr.To(int32(9))}}[tn.rnd.IntN(4)]
	}
	target := tn.r.w.host + " to none"
	if capacity != nil {
		target = fmt.Sprintf("%s to %s and %d", tn.r.w.host, capacity.Memory.String(), *capacity.Sandboxes)
	}
	if err := tn.setCapacity(ctx, capacity); err != nil {
		return target, err
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.capacity = tenantLimit{changed: time.Now()}
	if capacity != nil {
		tn.capacity = tenantLimit{set: true, memory: *capacity.Memory, units: int(*capacity.Sandboxes), changed: time.Now()}
	}
	return target, nil
}

func (tn *tenant) setCapacity(ctx context.Context, capacity *sandboxv1.DockerHostCapacity) error {
	return tn.editHost(ctx, func(s *sandboxv1.DockerHostSpec) { s.Capacity = capacity })
}

// restoreOperator leaves the host uncordoned and without a capacity, and the
// namespace without its policy, as the next run expects them.
func (tn *tenant) restoreOperator(ctx context.Context) {
	if err := tn.cordon(ctx, false); err != nil {
		tn.r.t.Logf("uncordoning %s: %v", tn.r.w.host, err)
	}
	if err := tn.setCapacity(ctx, nil); err != nil {
		tn.r.t.Logf("unsetting %s's capacity: %v", tn.r.w.host, err)
	}
	p := &sandboxv1.SandboxPolicy{ObjectMeta: metav1.ObjectMeta{Name: tn.r.w.ns}}
	if err := tn.r.h.k8s.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
		tn.r.t.Logf("deleting the SandboxPolicy: %v", err)
	}
}

// removeContainer removes a running service container out of band, as an
// operator's docker rm does.
func (tn *tenant) removeContainer(ctx context.Context) (string, error) {
	sbs, err := tn.r.w.sandboxes(ctx)
	if err != nil {
		return "", err
	}
	cs, err := tn.r.h.tenantContainers(ctx, tn.r.instance, sbs)
	if err != nil {
		return "", err
	}
	var running []tenantContainer
	for _, c := range cs {
		if c.running {
			running = append(running, c)
		}
	}
	if len(running) == 0 {
		return "", nil
	}
	c := running[tn.rnd.IntN(len(running))]
	_, err = tn.r.h.daemon.Docker(ctx, "rm", "-f", c.id)
	return c.engine + " of " + c.uid, err
}
