package host_test

import (
	"context"
	"errors"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// A dead container Docker cannot remove that holds the service's name is renamed
// aside, labels kept; the name is free for the service.
func TestRetireSetsAsideWhatDockerCannotRemove(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, nil)
	if _, err := f.WedgeRemoval(c.ID); err != nil {
		t.Fatal(err)
	}
	got, err := h.Retire(context.Background(), c, svc.Container.Name)
	want := svc.Container.Name + "-dead-" + dd.ShortID(c.ID)
	if err != nil || !errors.Is(got.Stuck, dd.ErrRemovalStuck) || got.Aside != want {
		t.Fatalf("Retire = %+v, %v; want it stuck and set aside as %s", got, err, want)
	}
	dead, ok := f.Peek(c.ID)
	if !ok || dead.Name != want || dead.Labels[host.LabelUID] != "uid-1" {
		t.Errorf("the dead container is %+v (found %v); want it named %s with its labels", dead, ok, want)
	}
	if _, held := f.Peek(svc.Container.Name); held {
		t.Errorf("the service's name is still held")
	}
	if !host.IsAside(want, svc.Container.Name) || host.IsAside(svc.Container.Name, svc.Container.Name) {
		t.Errorf("IsAside does not tell the name set aside from the service's own")
	}
}

// One that holds another name is left where it is (it stands in nobody's way);
// a removal that fails for another reason is the caller's to retry; a container
// that can be removed is.
func TestRetireOtherwise(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	old := svc.Container
	old.Name = "roboco-sandbox-postgres-old"
	c := seed(t, f, old, nil)
	release, err := f.WedgeRemoval(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Retire(context.Background(), c, svc.Container.Name)
	if err != nil || got.Stuck == nil || got.Aside != "" {
		t.Errorf("Retire of a stuck container of another name = %+v, %v; want it stuck, not renamed", got, err)
	}
	if now, _ := f.Peek(c.ID); now.Name != old.Name {
		t.Errorf("renamed to %s", now.Name)
	}
	release()
	clear := f.Inject(fake.Fault{Verb: fake.VerbRemove, Err: dd.ErrUnavailable})
	if got, err := h.Retire(context.Background(), c, old.Name); !errors.Is(err, dd.ErrUnavailable) || got.Stuck != nil {
		t.Errorf("Retire with Docker down = %+v, %v; want Docker's error, nothing set aside", got, err)
	}
	clear()
	if got, err := h.Retire(context.Background(), c, old.Name); err != nil || got != (host.Retired{}) {
		t.Errorf("Retire = %+v, %v; want it removed", got, err)
	}
	if _, ok := f.Peek(c.ID); ok {
		t.Errorf("still there after its removal")
	}
}

// A failed removal of a container Docker reports dead is stuck, whatever the
// error said (Docker's own removal may hold it).
func TestRetireJudgesByState(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	c := seed(t, f, svc.Container, nil)
	release, err := f.WedgeRemoval(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	release()
	f.Inject(fake.Fault{Verb: fake.VerbRemove, Err: dd.ErrTimeout})
	got, err := h.Retire(context.Background(), c, svc.Container.Name)
	if err != nil || got.Aside == "" {
		t.Errorf("Retire of a dead container whose removal timed out = %+v, %v; want it set aside", got, err)
	}
}

// The service's container and one set aside carry the same Sandbox UID and
// engine: the live one is the service, the dead one only to remove, and the known
// container set aside did not vanish.
func TestObserveTellsTheServiceFromOneSetAside(t *testing.T) {
	h, f := newHost()
	svc := service(512 << 20)
	deadSpec := svc.Container
	deadSpec.Name = host.AsideName(svc.Container.Name, "0123456789abcdef")
	dead := seed(t, f, deadSpec, nil)
	if _, err := f.WedgeRemoval(dead.ID); err != nil {
		t.Fatal(err)
	}
	dead.State = dd.StateDead
	obs, err := h.Observe(context.Background(), svc, []dd.ContainerSummary{dead}, dead.ID)
	if err != nil || obs.Phase != host.Absent || obs.Current != nil || len(obs.Outdated) != 0 || len(obs.Aside) != 1 {
		t.Fatalf("alone: observation %+v, err %v; want the service absent and the dead one aside", obs, err)
	}
	live := seed(t, f, svc.Container, nil)
	for _, ours := range [][]dd.ContainerSummary{{live, dead}, {dead, live}} {
		obs, err := h.Observe(context.Background(), svc, ours, dead.ID)
		if err != nil || obs.Phase != host.Running || obs.Current == nil || obs.Current.ID != live.ID ||
			len(obs.Outdated) != 0 || len(obs.Aside) != 1 || obs.Aside[0].ID != dead.ID {
			t.Errorf("observation %+v, err %v; want the live one running as the service, the dead one aside", obs, err)
		}
	}
}
