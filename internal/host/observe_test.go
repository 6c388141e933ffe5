package host_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// service is a postgres service as the reconciler would resolve it.
func service(memory int64) host.Service {
	e, _ := engine.Lookup("postgres")
	spec := dd.ContainerSpec{
		Name: "roboco-sandbox-postgres-a1", Image: "postgres:16-alpine", Network: "sbx",
		Aliases: []string{"roboco-sandbox-postgres-a1"},
		Labels:  map[string]string{host.LabelUID: "uid-1", host.LabelEngine: "postgres"}, OwnerLabel: host.LabelUID,
		Env: e.Env("pw-1"), Tmpfs: e.Tmpfs(), MemoryBytes: memory, NanoCPUs: 1e9, PidsLimit: 512,
	}
	spec.Labels[host.LabelConfigHash] = host.Fingerprint(spec)
	return host.Service{Engine: e, Network: "sbx", Password: "pw-1", ProbeDeadline: time.Minute, Container: spec}
}

func newHost() (*host.Host, *fake.Driver) {
	f := fake.New()
	f.AddNetwork("sbx")
	return host.New(f, time.Second, host.NewPulls(f, func(string) {}, nil)), f
}

// seed makes the service's container as an earlier pass would have, with labels.
func seed(t *testing.T, f *fake.Driver, spec dd.ContainerSpec, labels map[string]string) dd.ContainerSummary {
	t.Helper()
	spec.Labels = maps.Clone(spec.Labels)
	for k, v := range labels {
		spec.Labels[k] = v
	}
	c, err := f.SeedContainer(spec, true)
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.List(context.Background(), map[string]string{host.LabelUID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == c.ID {
			return s
		}
	}
	t.Fatalf("seeded container %s not listed", c.Name)
	return dd.ContainerSummary{}
}

func TestObserveWithoutContainers(t *testing.T) {
	h, _ := newHost()
	for knownID, want := range map[string]host.Phase{"": host.Absent, "c0ffee": host.Vanished} {
		obs, err := h.Observe(context.Background(), service(512<<20), nil, knownID)
		if err != nil || obs.Phase != want || obs.Current != nil {
			t.Errorf("known %q: phase %s, current %v, err %v; want %s", knownID, obs.Phase, obs.Current, err, want)
		}
	}
}

// An unchanged container is judged by its fingerprint label: steady state costs no inspect.
func TestObserveCurrentCostsNoInspect(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, map[string]string{host.LabelRestarts: "2"})
	f.ResetCalls()
	obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID)
	if err != nil || obs.Phase != host.Running || obs.Current == nil || obs.Current.ID != c.ID || len(obs.Outdated) > 0 {
		t.Fatalf("observation %+v, err %v; want the container running and current", obs, err)
	}
	if obs.Restarts != 2 {
		t.Errorf("restarts = %d, want the label's 2", obs.Restarts)
	}
	if n := f.Calls(fake.VerbInspect); n != 0 {
		t.Errorf("%d inspects for an unchanged container, want 0", n)
	}
}

// A label that no longer matches does not decide alone: what Docker reports the
// container was made with does.
func TestObserveJudgesWhatTheContainerWasMadeWith(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, map[string]string{host.LabelConfigHash: "from-an-older-release"})
	obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID)
	if err != nil || obs.Phase != host.Running || len(obs.Outdated) > 0 {
		t.Fatalf("observation %+v, err %v; a container made with the wanted config must be kept", obs, err)
	}

	bigger := service(1 << 30)
	obs, err = h.Observe(context.Background(), bigger, []dd.ContainerSummary{c}, c.ID)
	if err != nil || obs.Phase != host.Vanished || len(obs.Outdated) != 1 {
		t.Fatalf("observation %+v, err %v; want the container outdated", obs, err)
	}
	if why := obs.Outdated[0].Why; !strings.Contains(why, "memory 512Mi → 1Gi") {
		t.Errorf("why = %q, want it to name the memory change", why)
	}
}

func TestObserveOtherNameIsOutdated(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	old := svc.Container
	old.Name = "roboco-sandbox-postgres-old"
	c := seed(t, f, old, nil)
	obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, "")
	if err != nil || obs.Phase != host.Absent || len(obs.Outdated) != 1 || !strings.Contains(obs.Outdated[0].Why, "named roboco-sandbox-postgres-old") {
		t.Fatalf("observation %+v, err %v; want the other name outdated and the service absent", obs, err)
	}
}

func TestObserveStoppedIsInspected(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, nil)
	if err := f.ExitContainer(c.ID, 137, 0); err != nil {
		t.Fatal(err)
	}
	c.State = dd.StateExited
	obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID)
	if err != nil || obs.Phase != host.Stopped || obs.Stopped.ExitCode != 137 || obs.Stopped.FinishedAt.IsZero() {
		t.Fatalf("observation %+v, err %v; want it stopped, inspected with its exit", obs, err)
	}
}

func TestObserveDockerDown(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, map[string]string{host.LabelConfigHash: "stale"})
	f.Inject(fake.Fault{Verb: fake.VerbInspect, Err: dd.ErrUnavailable})
	if _, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID); err == nil {
		t.Fatal("an unanswered inspect must not be taken for a verdict")
	}
}
