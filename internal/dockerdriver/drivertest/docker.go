package drivertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
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

var busyboxApplets = []string{"sh", "echo", "printf", "sleep", "yes", "head", "cat", "env", "true", "false", "ls", "grep", "id", "kill", "ps", "wc", "tr", "cut", "timeout"}

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
