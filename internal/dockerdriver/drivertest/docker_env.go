package drivertest

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

type dockerEnv struct {
	fx     *DockerFixture
	proxy  *proxy
	labels map[string]string
	// identityRepo is the subtest's own identity marker repository.
	identityRepo string

	mu     sync.Mutex
	images []string // references pulled or tagged, removed at cleanup
}

func (e *dockerEnv) Image() string             { return e.fx.Image }
func (e *dockerEnv) Command(s Script) []string { return ShellCommand(s) }
func (e *dockerEnv) Labels() map[string]string { return e.labels }

func (e *dockerEnv) cleanup(t *testing.T) func() {
	return func() {
		e.fx.sweep(t, e.labels)
		e.mu.Lock()
		defer e.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fx := client.Filters{}.Add("reference", e.identityRepo)
		if markers, err := e.fx.Client.ImageList(ctx, client.ImageListOptions{Filters: fx}); err != nil {
			t.Errorf("cleanup: list identity markers: %v", err)
		} else {
			for _, img := range markers.Items {
				if _, err := e.fx.Client.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
					t.Errorf("cleanup: remove identity marker %s: %v", img.ID, err)
				}
			}
		}
		for _, ref := range e.images {
			if _, err := e.fx.Client.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("cleanup: remove image %s: %v", ref, err)
			}
		}
	}
}

func (e *dockerEnv) Network(t *testing.T) string {
	name := "sdt-net-" + randomHex(6)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := e.fx.Client.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: e.labels}); err != nil {
		t.Fatalf("create network: %v", err)
	}
	return name
}

func (e *dockerEnv) RemoveNetwork(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := e.fx.Client.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil {
		t.Fatalf("remove network %s: %v", name, err)
	}
}

func (e *dockerEnv) CreateNotStarted(t *testing.T, spec dd.ContainerSpec) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := e.fx.Client.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       spec.Name,
		Config:     &container.Config{Image: spec.Image, Labels: spec.Labels, Cmd: spec.Cmd, Env: spec.EnvList()},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(spec.Network)},
	})
	if err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
}

// ExecsRunning asks the daemon for the container's processes (docker top, which
// runs ps on the host) and counts those whose command line is cmd's.
func (e *dockerEnv) ExecsRunning(t *testing.T, container string, cmd []string) int {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	top, err := e.fx.Client.ContainerTop(ctx, container, client.ContainerTopOptions{Arguments: []string{"-eo", "pid,args"}})
	if err != nil {
		t.Fatalf("top %s: %v", container, err)
	}
	col := slices.Index(top.Titles, "COMMAND")
	if col < 0 {
		t.Fatalf("top %s: no COMMAND column in %q", container, top.Titles)
	}
	want, n := strings.Join(cmd, " "), 0
	for _, p := range top.Processes {
		if p[col] == want {
			n++
		}
	}
	return n
}

func (e *dockerEnv) VolumeExists(t *testing.T, name string) bool {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := e.fx.Client.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("inspect volume %s: %v", name, err)
	}
	return true
}

func (e *dockerEnv) Disconnect(t *testing.T) func() {
	e.proxy.cut()
	return func() {
		if err := e.proxy.listen(); err != nil {
			t.Fatalf("reconnect: %v", err)
		}
	}
}

func (e *dockerEnv) Stall(t *testing.T) func() {
	resume := e.proxy.stall()
	t.Cleanup(resume)
	return resume
}

func (e *dockerEnv) Registry(t *testing.T) Registry {
	r := &dockerRegistry{env: e, pulls: map[string]int{}, holds: map[string]chan struct{}{}}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if os.Getenv("SDT_DEBUG") != "" {
			log.Printf("registry: %s %s", req.Method, req.URL.Path)
		}
		if key, ok := manifestKey(req.URL.Path); ok {
			r.mu.Lock()
			// Docker 20.10 resolves the tag once per pull (HEAD, then
			// GET by digest); pushes only PUT it.
			if req.Method == http.MethodGet || req.Method == http.MethodHead {
				r.pulls[key]++
			}
			hold := r.holds[key]
			r.mu.Unlock()
			if hold != nil {
				select {
				case <-hold:
				case <-req.Context().Done():
					return
				}
			}
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	// Docker treats registries on loopback as insecure (plain HTTP allowed).
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}
