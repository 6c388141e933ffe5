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

// service is a postgres service as the reconciler would resolve it, its memory
// chosen by the Sandbox.
func service(memory int64) host.Service {
	e, _ := engine.Lookup("postgres")
	made := e.Container("pw-1", nil)
	spec := dd.ContainerSpec{
		Name: "roboco-sandbox-postgres-a1", Image: "postgres:16-alpine", Network: "sbx",
		Aliases: []string{"roboco-sandbox-postgres-a1"},
		Labels: map[string]string{host.LabelUID: "uid-1", host.LabelEngine: "postgres",
			host.LabelCredentials: host.CredentialsHash("pw-1"), host.LabelFeatures: ""}, OwnerLabel: host.LabelUID,
		Env: made.Env, Tmpfs: made.Tmpfs, MemoryBytes: memory, NanoCPUs: 1e9, PidsLimit: 512, CapAdd: made.CapAdd,
		Files: []dd.File{{Path: "/run/secrets/postgres-password", Mode: 0o444, Content: []byte("pw-1")}},
	}
	spec.Labels[host.LabelConfigHash] = host.Fingerprint(spec)
	return host.Service{Engine: e, Network: "sbx", Password: "pw-1", ProbeDeadline: time.Minute, Container: spec,
		Chosen: host.Chosen{Memory: true}, Images: e.Images()}
}

// rehash is svc after a change to its container.
func rehash(svc host.Service, change func(*dd.ContainerSpec)) host.Service {
	spec := svc.Container
	spec.Labels = maps.Clone(spec.Labels)
	change(&spec)
	spec.Labels[host.LabelConfigHash] = host.Fingerprint(spec)
	svc.Container = spec
	return svc
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
	if err != nil || obs.Phase != host.Running || len(obs.Outdated) > 0 || obs.Behind != "" {
		t.Fatalf("observation %+v, err %v; a container made with the wanted config must be kept, up to date", obs, err)
	}

	bigger := service(1 << 30)
	obs, err = h.Observe(context.Background(), bigger, []dd.ContainerSummary{c}, c.ID)
	if err != nil || len(obs.Outdated) != 1 || obs.Current != nil {
		t.Fatalf("observation %+v, err %v; want the container outdated", obs, err)
	}
	if why := obs.Outdated[0].Why; !strings.Contains(why, "memory 512Mi → 1Gi") {
		t.Errorf("why = %q, want it to name the memory change", why)
	}
	// Its replacement is no restart: the container did not vanish.
	if obs.Phase != host.Absent {
		t.Errorf("phase %s, want %s: a replaced container did not vanish", obs.Phase, host.Absent)
	}
}

// The operator's changes (here the pids limit, the default memory and the
// images) leave a running container alone: it is reported behind, with why.
func TestObserveKeepsContainersBehindTheOperatorsSettings(t *testing.T) {
	for name, change := range map[string]func(*host.Service){
		"pids limit": func(s *host.Service) { *s = rehash(*s, func(c *dd.ContainerSpec) { c.PidsLimit = 600 }) },
		"default memory": func(s *host.Service) {
			*s = rehash(*s, func(c *dd.ContainerSpec) { c.MemoryBytes = 1 << 30 })
			s.Chosen.Memory = false
		},
		"image": func(s *host.Service) { *s = rehash(*s, func(c *dd.ContainerSpec) { c.Image = "postgres:17-alpine" }) },
	} {
		t.Run(name, func(t *testing.T) {
			h, f := newHost()
			svc := service(512 << 20)
			c := seed(t, f, svc.Container, nil)
			change(&svc)
			f.ResetCalls()
			for range 3 {
				obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID)
				if err != nil || obs.Phase != host.Running || obs.Current == nil || obs.Current.ID != c.ID || len(obs.Outdated) > 0 {
					t.Fatalf("observation %+v, err %v; want the container kept running", obs, err)
				}
				if obs.Behind == "" {
					t.Errorf("not reported behind after a change of the %s", name)
				}
			}
			if n := f.Calls(fake.VerbInspect); n != 1 {
				t.Errorf("%d inspects in three passes, want 1: what a container was made with never changes", n)
			}
		})
	}
}

// A Sandbox that then sets, itself, the value the operator's default changed to
// asks for it: the same container is now replaced, though nothing else changed.
func TestObserveJudgesAgainWhenTheSandboxTakesOverASetting(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, nil)
	svc = rehash(svc, func(s *dd.ContainerSpec) { s.MemoryBytes = 1 << 30 })
	svc.Chosen.Memory = false
	if obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID); err != nil || obs.Behind == "" || len(obs.Outdated) > 0 {
		t.Fatalf("observation %+v, err %v; want the container kept, behind the default memory", obs, err)
	}
	svc.Chosen.Memory = true
	if obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID); err != nil || len(obs.Outdated) != 1 {
		t.Fatalf("observation %+v, err %v; want the container replaced for the memory the Sandbox set", obs, err)
	}
}

// Another password (the Secret was deleted) replaces the container, though
// Docker cannot show the file the password is in.
func TestObserveReplacesForOtherCredentials(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, nil)
	svc.Password = "pw-2"
	svc = rehash(svc, func(s *dd.ContainerSpec) {
		s.Files = []dd.File{{Path: "/run/secrets/postgres-password", Mode: 0o444, Content: []byte("pw-2")}}
		s.Labels[host.LabelCredentials] = host.CredentialsHash("pw-2")
	})
	obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{c}, c.ID)
	if err != nil || len(obs.Outdated) != 1 || obs.Outdated[0].Why != "credentials changed" {
		t.Fatalf("observation %+v, err %v; want the container replaced for its credentials", obs, err)
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
