package fake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/drivertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

const testImage = "sandbox-driver-test/busybox:fake"

func TestContract(t *testing.T) {
	drivertest.RunContract(t, func(t *testing.T, cfg drivertest.Config) (dd.Driver, drivertest.Env) {
		var opts []fake.Option
		if cfg.PullTimeout > 0 {
			opts = append(opts, fake.WithPullTimeout(cfg.PullTimeout))
		}
		if cfg.CallTimeout > 0 {
			opts = append(opts, fake.WithCallTimeout(cfg.CallTimeout))
		}
		f := fake.New(opts...)
		f.AddImage(testImage, fake.Image{Volumes: []string{"/data"}})
		return f, &env{f: f}
	})
}

type env struct{ f *fake.Driver }

func (e *env) Image() string                        { return testImage }
func (e *env) Command(s drivertest.Script) []string { return fake.Command(fake.Script(s)) }
func (e *env) Labels() map[string]string            { return map[string]string{drivertest.TestLabel: "fake"} }

func (e *env) Network(*testing.T) string {
	name := fmt.Sprintf("sdt-net-%d", time.Now().UnixNano())
	e.f.AddNetwork(name)
	return name
}

func (e *env) RemoveNetwork(_ *testing.T, name string) { e.f.RemoveNetwork(name) }

func (e *env) CreateNotStarted(t *testing.T, spec dd.ContainerSpec) {
	if _, err := e.f.SeedContainer(spec, false); err != nil {
		t.Fatal(err)
	}
}

func (e *env) ExecsRunning(_ *testing.T, container string, cmd []string) int {
	return e.f.ExecsRunning(container, cmd)
}

func (e *env) VolumeExists(_ *testing.T, name string) bool {
	for _, v := range e.f.Volumes() {
		if v.Name == name {
			return true
		}
	}
	return false
}

func (e *env) Stall(t *testing.T) func() {
	resume := e.f.Inject(fake.Fault{Delay: time.Hour})
	t.Cleanup(resume)
	return resume
}

func (e *env) Disconnect(*testing.T) func() {
	e.f.DropEvents()
	clear := e.f.Inject(fake.Fault{Err: dd.ErrUnavailable})
	return func() {
		clear()
		e.f.RestoreEvents()
	}
}

func (e *env) Registry(*testing.T) drivertest.Registry { return registry{e.f} }

type registry struct{ f *fake.Driver }

func (r registry) MissingTag(t *testing.T, name string) string {
	return strings.TrimSuffix(r.Push(t, name), ":v1") + ":absent"
}

func (r registry) Push(_ *testing.T, name string) string {
	ref := fmt.Sprintf("registry.fake.test/sdt/%s-%d:v1", name, time.Now().UnixNano())
	r.f.AddRegistryImage(ref, fake.Image{Volumes: []string{"/data"}})
	return ref
}

func (r registry) Pulls(ref string) int { return r.f.RegistryPulls(ref) }

func (r registry) Hold(t *testing.T, ref string) func() {
	release := r.f.HoldPull(ref)
	t.Cleanup(release)
	return release
}

// What follows tests the fault injection the controller tests rely on.

func newFake(t *testing.T) (*fake.Driver, context.Context) {
	f := fake.New()
	f.AddImage(testImage, fake.Image{Volumes: []string{"/data"}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return f, ctx
}

func ownSpec(name string, s fake.Script) dd.ContainerSpec {
	return dd.ContainerSpec{
		Name: name, Image: testImage, Cmd: fake.Command(s),
		Labels: map[string]string{drivertest.OwnerLabel: "u1"}, OwnerLabel: drivertest.OwnerLabel,
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	f, ctx := newFake(t)
	if _, err := f.SeedContainer(ownSpec("ctr-a", fake.Script{Sleep: fake.Forever}), true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.SeedContainer(ownSpec("ctr-b", fake.Script{Sleep: fake.Forever}), true); err != nil {
		t.Fatal(err)
	}

	// By verb and name, for two calls.
	f.Inject(fake.Fault{Verb: fake.VerbInspect, Ref: "ctr-a", Err: dd.ErrUnavailable, Times: 2})
	for i := range 3 {
		_, err := f.Inspect(ctx, "ctr-a")
		if want := i < 2; errors.Is(err, dd.ErrUnavailable) != want {
			t.Errorf("Inspect(a) #%d = %v, want unavailable: %v", i, err, want)
		}
		if err != nil && err.Error() != "inspect ctr-a: docker unavailable" {
			t.Errorf("injected error text %q", err)
		}
	}
	if _, err := f.Inspect(ctx, "ctr-b"); err != nil {
		t.Errorf("Inspect(b) = %v; the fault was for a", err)
	}

	// A delay that the caller's ctx cuts short.
	clear := f.Inject(fake.Fault{Verb: fake.VerbList, Delay: time.Hour})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := f.List(short, nil); !errors.Is(err, dd.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delayed List = %v, want a timeout", err)
	}
	clear()
	if _, err := f.List(ctx, nil); err != nil {
		t.Errorf("List after clear = %v", err)
	}

	// A *dd.Error is returned as given.
	want := dd.NewError("remove", "ctr-b", dd.ErrConflict, errors.New("removal of container b is already in progress"))
	f.Inject(fake.Fault{Verb: fake.VerbRemove, Err: want, Times: 1})
	if err := f.Remove(ctx, "ctr-b", time.Second); err != want { //nolint:errorlint // identity is the point: the very error injected
		t.Errorf("Remove = %v, want the injected error", err)
	}
}

func TestCallCounts(t *testing.T) {
	t.Parallel()
	f, ctx := newFake(t)
	mustCreate(t, f, ctx, ownSpec("ctr-c", fake.Script{Sleep: fake.Forever}))
	_, _ = f.Inspect(ctx, "ctr-c")
	_, _ = f.Inspect(ctx, "ctr-c")
	if got := f.Calls(fake.VerbInspect); got != 2 {
		t.Errorf("Calls(Inspect) = %d, want 2", got)
	}
	if got := f.TotalCalls(); got != 3 {
		t.Errorf("TotalCalls = %d, want 3", got)
	}
	f.ResetCalls()
	// Out-of-band helpers are not driver calls.
	_, _ = f.Peek("ctr-c")
	_ = f.ExitContainer("ctr-c", 1, 0)
	if got := f.TotalCalls(); got != 0 {
		t.Errorf("TotalCalls after reset and helpers = %d, want 0", got)
	}
}

func mustCreate(t *testing.T, f *fake.Driver, ctx context.Context, s dd.ContainerSpec) dd.Container {
	t.Helper()
	c, err := f.CreateContainer(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExitAndOOM(t *testing.T) {
	t.Parallel()
	f, ctx := newFake(t)
	events := f.Events(ctx, dd.EventFilter{Labels: map[string]string{drivertest.OwnerLabel: "u1"}})
	mustCreate(t, f, ctx, ownSpec("ctr-x", fake.Script{Sleep: fake.Forever}))
	if err := f.ExitContainer("ctr-x", 42, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, f, ctx, ownSpec("ctr-y", fake.Script{Sleep: fake.Forever}))
	if err := f.OOMKill("ctr-y"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 7 {
		select {
		case e := <-events:
			got = append(got, fmt.Sprintf("%s %s %d", e.Name, e.Type, e.ExitCode))
		case <-ctx.Done():
			t.Fatalf("events so far: %v", got)
		}
	}
	want := []string{"ctr-x create 0", "ctr-x start 0", "ctr-y create 0", "ctr-y start 0", "ctr-y oom 0", "ctr-y die 137", "ctr-x die 42"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if y, _ := f.Peek("ctr-y"); !y.OOMKilled || y.State != dd.StateExited || y.ExitCode != 137 {
		t.Errorf("y = %s %d oom=%v, want exited 137 OOM-killed", y.State, y.ExitCode, y.OOMKilled)
	}
}

func TestExecRules(t *testing.T) {
	t.Parallel()
	f, ctx := newFake(t)
	mustCreate(t, f, ctx, ownSpec("ctr-db", fake.Script{Sleep: fake.Forever}))
	probe := dd.ExecSpec{Cmd: []string{"pg_isready", "-h", "127.0.0.1"}, Timeout: 100 * time.Millisecond}

	if r, err := f.Exec(ctx, "ctr-db", probe); err != nil || r.ExitCode != 0 {
		t.Errorf("default exec = %+v, %v; want exit 0", r, err)
	}
	clear := f.OnExec(fake.ExecRule{Container: "ctr-db", Hang: true})
	if _, err := f.Exec(ctx, "ctr-db", probe); !errors.Is(err, dd.ErrTimeout) {
		t.Errorf("hanging exec = %v, want a timeout", err)
	}
	if _, err := f.Exec(ctx, "ctr-db", probe); !errors.Is(err, dd.ErrBusy) {
		t.Errorf("exec while the hung one runs = %v, want busy", err)
	}
	clear() // the hung exec ends with its rule
	f.OnExec(fake.ExecRule{Container: "ctr-db", Result: dd.ExecResult{ExitCode: 2, Stderr: "no response"}, Times: 1})
	if r, err := f.Exec(ctx, "ctr-db", probe); err != nil || r.ExitCode != 2 || r.Stderr != "no response" {
		t.Errorf("ruled exec = %+v, %v; want exit 2", r, err)
	}
	if r, err := f.Exec(ctx, "ctr-db", probe); err != nil || r.ExitCode != 0 {
		t.Errorf("exec after a one-time rule = %+v, %v; want exit 0", r, err)
	}
}

func TestHeldPullTimesOutAndReleases(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithPullTimeout(200 * time.Millisecond))
	ctx := t.Context()
	ref := "registry.fake.test/pg:16"
	f.AddRegistryImage(ref, fake.Image{Layers: 3, LayerSize: 100})
	release := f.HoldPull(ref)
	err := f.PullImage(ctx, ref, nil)
	if want := "pull " + ref + ": timeout after 200ms: context deadline exceeded"; err == nil || err.Error() != want {
		t.Errorf("held pull = %v, want %q", err, want)
	}
	release()
	var mu sync.Mutex
	var last dd.PullProgress
	if err := f.PullImage(ctx, ref, func(p dd.PullProgress) { mu.Lock(); last = p; mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	if last.Layers != 3 || last.LayersDone != 3 || last.BytesDone != 300 || last.BytesTotal != 300 {
		t.Errorf("last progress %+v, want 3/3 layers, 300/300 bytes", last)
	}
	if n := f.RegistryPulls(ref); n != 2 {
		t.Errorf("RegistryPulls = %d, want 2", n)
	}
}

func TestVolumesFollowContainers(t *testing.T) {
	t.Parallel()
	f, ctx := newFake(t)
	c := mustCreate(t, f, ctx, ownSpec("ctr-v", fake.Script{Sleep: fake.Forever}))
	if vs := f.Volumes(); len(vs) != 1 || vs[0].Container != c.ID || vs[0].Destination != "/data" {
		t.Fatalf("Volumes = %+v, want one /data volume of %s", vs, c.ID)
	}
	if err := f.DeleteContainer("ctr-v"); err != nil {
		t.Fatal(err)
	}
	if vs := f.Volumes(); len(vs) != 0 {
		t.Errorf("Volumes after delete = %+v", vs)
	}
}
