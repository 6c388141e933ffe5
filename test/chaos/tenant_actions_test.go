package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// act takes one tenant action, chosen at random among those that apply.
func (tn *tenant) act(ctx context.Context) (kind, target string, err error) {
	live, err := tn.live(ctx)
	if err != nil {
		return "look", "", err
	}
	var pick *sandboxv1.Sandbox
	if len(live) > 0 {
		pick = live[tn.rnd.IntN(len(live))]
	}
	switch k := tn.rnd.IntN(20); {
	case pick == nil || k < 4 && len(live) < tenantMaxLive:
		return "create", "", tn.create(ctx)
	case k < 6:
		return "delete", pick.Name, tn.delete(ctx, pick)
	case k < 10:
		return "memory", pick.Name, tn.edit(ctx, pick, tn.memory)
	case k < 13:
		return "services", pick.Name, tn.edit(ctx, pick, tn.services)
	case k < 18:
		kind, err := tn.seed(ctx)
		return kind, tenantSeedConfigMap, err
	}
	name, err := tn.removeContainer(ctx)
	return "remove-container", name, err
}

// create makes a Sandbox of one or two services, each with a random memory
// limit; a redis service is seeded from the tenant's ConfigMap half the time.
func (tn *tenant) create(ctx context.Context) error {
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
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return tn.r.h.k8s.Create(cctx, sb)
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
	err := tn.r.h.k8s.Delete(cctx, sb)
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
		err := tn.r.h.k8s.Get(cctx, client.ObjectKeyFromObject(sb), cur)
		if err == nil {
			change(&cur.Spec)
			err = tn.r.h.k8s.Update(cctx, cur)
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

// seed changes the tenant's init ConfigMap: a key no engine runs, that key
// removed, a script added or changed, or the ConfigMap deleted (made again
// by the next change).
func (tn *tenant) seed(ctx context.Context) (string, error) {
	cur := &corev1.ConfigMap{}
	err := tn.r.h.k8s.Get(ctx, client.ObjectKey{Namespace: tn.r.w.ns, Name: tenantSeedConfigMap}, cur)
	if apierrors.IsNotFound(err) {
		return "seed-recreate", tn.writeSeed(ctx, map[string]string{"10-keys.redis": "SET seeded 1"})
	} else if err != nil {
		return "seed", err
	}
	data := cur.Data
	if data == nil {
		data = map[string]string{}
	}
	switch k := tn.rnd.IntN(4); {
	case k == 0 && data["README.md"] == "":
		data["README.md"] = "notes, no engine runs this"
		return "seed-bad-key", tn.writeSeed(ctx, data)
	case k <= 1:
		delete(data, "README.md")
		return "seed-fix", tn.writeSeed(ctx, data)
	case k == 2:
		data["20-more.redis"] = "SET more " + strconv.Itoa(tn.rnd.IntN(1000))
		return "seed-script", tn.writeSeed(ctx, data)
	}
	return "seed-delete", client.IgnoreNotFound(tn.r.h.k8s.Delete(ctx, cur))
}

// writeSeed makes or replaces the tenant's init ConfigMap with data.
func (tn *tenant) writeSeed(ctx context.Context, data map[string]string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tn.r.w.ns, Name: tenantSeedConfigMap}, Data: data}
	err := tn.r.h.k8s.Update(ctx, cm)
	if apierrors.IsNotFound(err) {
		return tn.r.h.k8s.Create(ctx, cm)
	}
	return err
}

// removeContainer removes a running service container out of band.
func (tn *tenant) removeContainer(ctx context.Context) (string, error) {
	cs, err := tn.r.h.tenantContainers(ctx, tn.r.instance)
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

// tenantContainer is a service container of the run, with its memory limit.
type tenantContainer struct {
	id, uid, engine string
	running         bool
	memory          int64
}

// tenantContainers lists the run's service containers with their memory.
func (h *harness) tenantContainers(ctx context.Context, instance string) ([]tenantContainer, error) {
	cs, err := h.containers(ctx, instance)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
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
		if len(f) != 3 || !ok || c.uid == "" {
			continue
		}
		mem, _ := strconv.ParseInt(f[1], 10, 64)
		res = append(res, tenantContainer{id: c.id, uid: c.uid, engine: c.engine, running: f[2] == "true", memory: mem})
	}
	return res, nil
}
