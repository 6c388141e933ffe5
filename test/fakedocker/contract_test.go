package fakedocker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/drivertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

const testImage = "sandbox-driver-test/busybox:fakedocker"

// TestContract runs the driver contract against the real driver talking to a
// fake daemon, one per subtest.
func TestContract(t *testing.T) {
	drivertest.RunContract(t, func(t *testing.T, cfg drivertest.Config) (dd.Driver, drivertest.Env) {
		srv := serve(t, fakedocker.New(fakedocker.WithImage(testImage, fakedocker.Image{Volumes: []string{"/data"}})))
		opts := []dd.Option{dd.WithHost(srv.Host()), dd.WithEventBackoff(20*time.Millisecond, 500*time.Millisecond)}
		if cfg.PullTimeout > 0 {
			opts = append(opts, dd.WithPullTimeout(cfg.PullTimeout))
		}
		if cfg.CallTimeout > 0 {
			opts = append(opts, dd.WithCallTimeout(cfg.CallTimeout))
		}
		return newDriver(t, opts...), &env{srv: srv}
	})
}

// serve starts srv on a socket of its own until the test ends.
func serve(t testing.TB, srv *fakedocker.Server) *fakedocker.Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "fd") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen("unix", filepath.Join(dir, "docker.sock")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		_ = os.RemoveAll(dir)
	})
	return srv
}

func newDriver(t testing.TB, opts ...dd.Option) *dd.Docker {
	t.Helper()
	d, err := dd.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

type env struct{ srv *fakedocker.Server }

func (e *env) Image() string                        { return testImage }
func (e *env) Command(s drivertest.Script) []string { return fake.Command(fake.Script(s)) }
func (e *env) Labels() map[string]string {
	return map[string]string{drivertest.TestLabel: "fakedocker"}
}

func (e *env) Network(*testing.T) string {
	name := fmt.Sprintf("sdt-net-%d", time.Now().UnixNano())
	e.srv.AddNetwork(name)
	return name
}

func (e *env) RemoveNetwork(_ *testing.T, name string) { e.srv.RemoveNetwork(name) }

// CreateNotStarted creates through the API, as a creator that died before the
// start leaves the container.
func (e *env) CreateNotStarted(t *testing.T, spec dd.ContainerSpec) {
	cli, err := client.New(client.WithHost(e.srv.Host()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: spec.Name,
		Config:     &container.Config{Image: spec.Image, Labels: spec.Labels, Cmd: spec.Cmd, Env: spec.EnvList()},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(spec.Network)}})
	if err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
}

func (e *env) ExecsRunning(_ *testing.T, container string, cmd []string) int {
	return e.srv.ExecsRunning(container, cmd)
}

func (e *env) VolumeExists(_ *testing.T, name string) bool { return e.srv.VolumeExists(name) }

func (e *env) Disconnect(t *testing.T) func() {
	e.srv.Down()
	return func() {
		if err := e.srv.Up(); err != nil {
			t.Fatalf("reconnect: %v", err)
		}
	}
}

func (e *env) Stall(t *testing.T) func() {
	resume := e.srv.Stall()
	t.Cleanup(resume)
	return resume
}

func (e *env) Registry(*testing.T) drivertest.Registry { return registry{e.srv} }

type registry struct{ srv *fakedocker.Server }

func (r registry) Push(_ *testing.T, name string) string {
	ref := fmt.Sprintf("registry.fakedocker.test/sdt/%s-%d:v1", name, time.Now().UnixNano())
	r.srv.AddRegistryImage(ref, fakedocker.Image{Volumes: []string{"/data"}})
	return ref
}

func (r registry) MissingTag(t *testing.T, name string) string {
	return strings.TrimSuffix(r.Push(t, name), ":v1") + ":absent"
}

func (r registry) Pulls(ref string) int { return r.srv.RegistryPulls(ref) }

func (r registry) Hold(t *testing.T, ref string) func() {
	release := r.srv.HoldPull(ref)
	t.Cleanup(release)
	return release
}
