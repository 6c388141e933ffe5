package drivertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Labels the real-daemon fixture puts on what it creates.
const (
	TestLabel     = "sandbox.roboco.io/test"      // the run ID
	TestCaseLabel = "sandbox.roboco.io/test-case" // one subtest's driver
	FixtureLabel  = "sandbox.roboco.io/test-fixture"
)

// BusyboxPath is where Debian's busybox-static puts its binary.
const BusyboxPath = "/bin/busybox"

// DockerFixture runs the contract against the real daemon. Everything it
// creates is labelled TestLabel=<run ID> and removed at cleanup, except the
// busybox image, which is a cache keyed by the hash of its inputs.
type DockerFixture struct {
	Client *client.Client
	// Image is a FROM scratch busybox image with VOLUME /data.
	Image string
	RunID string
	// busybox is the static binary the images are made of.
	busybox []byte
	// daemon is where proxies forward to.
	daemonNet, daemonAddr string
}

// NewDockerFixture connects to the daemon of the environment. It skips the
// test only when SANDBOX_SKIP_DOCKER=1; a missing daemon is a failure.
func NewDockerFixture(t *testing.T) *DockerFixture {
	t.Helper()
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		t.Skip("SANDBOX_SKIP_DOCKER=1: not testing against a Docker daemon")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("no Docker daemon at %s (set SANDBOX_SKIP_DOCKER=1 to skip these tests): %v", cli.DaemonHost(), err)
	}
	network, addr, ok := strings.Cut(cli.DaemonHost(), "://")
	if !ok || (network != "unix" && network != "tcp") {
		t.Fatalf("cannot proxy to daemon host %q", cli.DaemonHost())
	}
	fx := &DockerFixture{Client: cli, RunID: randomHex(6), daemonNet: network, daemonAddr: addr}
	fx.sweepAbandoned(t)
	fx.Image = fx.busyboxImage(t)
	t.Cleanup(func() { fx.sweep(t, map[string]string{TestLabel: fx.RunID}) })
	return fx
}

// NewDriver is a NewDriver for RunContract: a driver that reaches the
// daemon through a proxy the Env can cut (Disconnect).
func (fx *DockerFixture) NewDriver(t *testing.T, cfg Config) (dd.Driver, Env) {
	t.Helper()
	p := startProxy(t, fx.daemonNet, fx.daemonAddr)
	env := &dockerEnv{fx: fx, proxy: p, labels: map[string]string{TestLabel: fx.RunID, TestCaseLabel: randomHex(6)}}
	// Note: every subtest plants its own identity marker; the daemon's real one
	// is the manager's.
	env.identityRepo = "sandbox-driver-test/host-identity-" + env.labels[TestCaseLabel]
	opts := []dd.Option{dd.WithHost("unix://" + p.path), dd.WithEventBackoff(20*time.Millisecond, 500*time.Millisecond),
		dd.WithIdentityMarker(env.identityRepo, map[string]string{TestLabel: fx.RunID})}
	if cfg.PullTimeout > 0 {
		opts = append(opts, dd.WithPullTimeout(cfg.PullTimeout))
	}
	if cfg.CallTimeout > 0 {
		opts = append(opts, dd.WithCallTimeout(cfg.CallTimeout))
	}
	d, err := dd.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.cleanup(t))
	t.Cleanup(func() { _ = d.Close() })
	return d, env
}

// sweep removes containers and networks carrying labels. Cleanup uses the
// fixture's own client, never the proxy a test may have cut.
func (fx *DockerFixture) sweep(t *testing.T, labels map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := client.Filters{}
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	list, err := fx.Client.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Errorf("cleanup: list containers: %v", err)
	}
	for _, c := range list.Items {
		if _, err := fx.Client.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("cleanup: remove container %s: %v", c.ID, err)
		}
	}
	nets, err := fx.Client.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Errorf("cleanup: list networks: %v", err)
	}
	for _, n := range nets.Items {
		if _, err := fx.Client.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("cleanup: remove network %s: %v", n.Name, err)
		}
	}
}

// abandonedAfter is when something a test run created counts as left by a
// run that was killed (its cleanup never ran) rather than one in progress.
const abandonedAfter = 30 * time.Minute

// sweepAbandoned removes test containers, networks and images older than
// abandonedAfter, whatever run made them.
func (fx *DockerFixture) sweepAbandoned(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	old := time.Now().Add(-abandonedAfter)
	f := client.Filters{}.Add("label", TestLabel)
	if list, err := fx.Client.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
		for _, c := range list.Items {
			if time.Unix(c.Created, 0).Before(old) {
				_, _ = fx.Client.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			}
		}
	}
	if nets, err := fx.Client.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
		for _, n := range nets.Items {
			if n.Created.Before(old) {
				_, _ = fx.Client.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
			}
		}
	}
	if imgs, err := fx.Client.ImageList(ctx, client.ImageListOptions{Filters: f}); err == nil {
		for _, img := range imgs.Items {
			if time.Unix(img.Created, 0).Before(old) {
				_, _ = fx.Client.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			}
		}
	}
}

// busyboxImage builds (once per content) a FROM scratch image holding a
// static busybox, with VOLUME /data so anonymous volumes can be tested.
func (fx *DockerFixture) busyboxImage(t *testing.T) string {
	t.Helper()
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatalf("need a static busybox at %s (apt-get install busybox-static): %v", BusyboxPath, err)
	}
	if ef, err := elf.NewFile(bytes.NewReader(bb)); err != nil {
		t.Fatalf("%s: %v", BusyboxPath, err)
	} else {
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Fatalf("%s is dynamically linked; a FROM scratch image needs busybox-static", BusyboxPath)
			}
		}
	}
	fx.busybox = bb
	changes := []string{"ENV PATH=/bin", "VOLUME /data", `CMD ["sh"]`, "LABEL " + FixtureLabel + "=busybox"}
	sum := sha256.New()
	sum.Write(bb)
	sum.Write([]byte(strings.Join(append(changes, busyboxApplets...), "\n")))
	tag := "sandbox-driver-test/busybox:" + hex.EncodeToString(sum.Sum(nil))[:12]

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := fx.Client.ImageInspect(ctx, tag); err == nil {
		return tag
	}
	fx.importImage(t, ctx, tag, changes, nil)
	return tag
}

// importImage creates a single-layer image from a busybox root file system
// (docker import: no builder, no intermediate containers or images).
func (fx *DockerFixture) importImage(t *testing.T, ctx context.Context, ref string, changes []string, extra map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	writeRootfs(t, tw, fx.busybox, extra)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := fx.Client.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	defer func() { _ = res.Close() }() // drained below; closing a read stream loses nothing
	if err := drain(res); err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
}

var busyboxApplets = []string{"sh", "echo", "printf", "sleep", "yes", "head", "cat", "env", "true", "false", "ls", "grep", "id", "kill", "ps", "wc", "tr", "cut"}

// writeRootfs writes a busybox root file system, plus extra files.
func writeRootfs(t *testing.T, tw *tar.Writer, busybox []byte, extra map[string][]byte) {
	t.Helper()
	for _, dir := range []string{"bin/", "data/", "proc/", "sys/", "dev/", "etc/"} {
		addFile(t, tw, &tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	}
	addFile(t, tw, &tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil)
	addFile(t, tw, &tar.Header{Name: "bin/busybox", Mode: 0o755}, busybox)
	for _, a := range busyboxApplets {
		addFile(t, tw, &tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}, nil)
	}
	for name, body := range extra {
		addFile(t, tw, &tar.Header{Name: name, Mode: 0o644}, body)
	}
}

func addFile(t *testing.T, tw *tar.Writer, h *tar.Header, body []byte) {
	t.Helper()
	h.Size = int64(len(body))
	h.ModTime = time.Unix(0, 0)
	if err := tw.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
}

// drain reads a daemon JSON message stream, returning the first error in it.
func drain(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
	}
}

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

func (e *dockerEnv) CreateNotStarted(t *testing.T, spec dd.ContainerSpec) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := e.fx.Client.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   spec.Name,
		Config: &container.Config{Image: spec.Image, Labels: spec.Labels, Cmd: spec.Cmd, Env: spec.EnvList()},
	})
	if err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
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

// manifestKey returns "name:reference" for /v2/<name>/manifests/<reference>.
func manifestKey(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "/manifests/")
	if i < 0 {
		return "", false
	}
	return rest[:i] + ":" + rest[i+len("/manifests/"):], true
}

type dockerRegistry struct {
	env  *dockerEnv
	srv  *httptest.Server
	host string

	mu    sync.Mutex
	pulls map[string]int
	holds map[string]chan struct{}
}

func (r *dockerRegistry) newRef(name string) string {
	return fmt.Sprintf("%s/sdt/%s-%s:v1", r.host, name, randomHex(4))
}

func (r *dockerRegistry) MissingTag(t *testing.T, name string) string {
	return strings.TrimSuffix(r.Push(t, name), ":v1") + ":absent"
}

func (r *dockerRegistry) key(ref string) string {
	return strings.TrimPrefix(ref, r.host+"/")
}

func (r *dockerRegistry) Push(t *testing.T, name string) string {
	t.Helper()
	ref := r.newRef(name)
	cli := r.env.fx.Client
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r.env.mu.Lock()
	r.env.images = append(r.env.images, ref)
	r.env.mu.Unlock()
	// A fresh image (busybox plus a nonce), so that the pull really
	// downloads a layer instead of finding it present.
	r.env.fx.importImage(t, ctx, ref, []string{"ENV PATH=/bin", "LABEL " + TestLabel + "=" + r.env.fx.RunID},
		map[string][]byte{"nonce": []byte(randomHex(16))})
	// Docker 20.10 refuses a push without an X-Registry-Auth header
	// ("Bad parameters and missing X-Registry-Auth"): send empty credentials.
	resp, err := cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: base64.URLEncoding.EncodeToString([]byte("{}"))})
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	if err := resp.Wait(ctx); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	// Untag locally, so the driver has to pull it.
	if _, err := cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil {
		t.Fatalf("untag %s: %v", ref, err)
	}
	r.mu.Lock()
	r.pulls[r.key(ref)] = 0
	r.mu.Unlock()
	return ref
}

func (r *dockerRegistry) Pulls(ref string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pulls[r.key(ref)]
}

func (r *dockerRegistry) Hold(t *testing.T, ref string) func() {
	ch := make(chan struct{})
	r.mu.Lock()
	r.holds[r.key(ref)] = ch
	r.mu.Unlock()
	release := sync.OnceFunc(func() {
		r.mu.Lock()
		delete(r.holds, r.key(ref))
		r.mu.Unlock()
		close(ch)
	})
	t.Cleanup(release)
	return release
}

// proxy forwards a unix socket to the daemon, and can cut every connection
// and stop listening, as a daemon restart looks to a client.
type proxy struct {
	path, network, addr string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	// stalled: connections are accepted and held, never answered, as a wedged
	// daemon does; held are those connections.
	stalled bool
	held    []net.Conn
}

func startProxy(t *testing.T, network, addr string) *proxy {
	dir, err := os.MkdirTemp("", "sdt") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{path: filepath.Join(dir, "docker.sock"), network: network, addr: addr, conns: map[net.Conn]bool{}}
	if err := p.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cut()
		_ = os.RemoveAll(dir)
	})
	return p
}

func (p *proxy) listen() error {
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return nil
}

func (p *proxy) pipe(c net.Conn) {
	p.mu.Lock()
	if p.stalled {
		p.held = append(p.held, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	u, err := net.Dial(p.network, p.addr)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = u.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// track registers a connection pair, unless the proxy was cut meanwhile.
func (p *proxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_ = c.Close()
		_ = u.Close()
		return false
	}
	p.conns[c], p.conns[u] = true, true
	return true
}

// cut stops listening (removing the socket) and breaks every connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// stall breaks every connection and from then on accepts new ones without ever
// answering them; resume closes those and forwards again.
func (p *proxy) stall() (resume func()) {
	p.mu.Lock()
	p.stalled = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.stalled = false
		for _, c := range p.held {
			_ = c.Close()
		}
		p.held = nil
	})
}
