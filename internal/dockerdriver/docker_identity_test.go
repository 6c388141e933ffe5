package dockerdriver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/drivertest"
)

// TestHostIdentityOnASecondDaemon runs a second Docker daemon beside the default
// one, sharing its /etc/docker/key.json, and checks that the identity marker tells
// the two apart and survives what a host goes through: `docker system prune
// --volumes` and a daemon restart.
func TestHostIdentityOnASecondDaemon(t *testing.T) {
	fx := drivertest.NewDockerFixture(t)
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Skip("no dockerd to run a second daemon with")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	second := startDaemon(t, ctx, fx.RunID)

	// Note: on the shared default daemon, a marker of the test's own.
	repo := "sandbox-driver-test/host-identity-" + fx.RunID
	first, err := dd.New(dd.WithIdentityMarker(repo, map[string]string{drivertest.TestLabel: fx.RunID}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Close() }()
	t.Cleanup(func() { removeImages(t, fx.Client, repo) })
	idA := plant(t, ctx, first)
	idB := plant(t, ctx, second.driver(t))

	if idA.DaemonID != idB.DaemonID {
		t.Logf("the daemons report different IDs (%s, %s): key.json is not shared here", idA.DaemonID, idB.DaemonID)
	}
	if idA.ID == idB.ID {
		t.Fatalf("two daemons prove one identity %s", idA.ID)
	}

	out, err := exec.CommandContext(ctx, "docker", "-H", second.host, "system", "prune", "--volumes", "--force").CombinedOutput()
	if err != nil {
		t.Fatalf("docker system prune --volumes: %v: %s", err, out)
	}
	if got := read(t, ctx, second.driver(t)); got != idB {
		t.Errorf("after docker system prune --volumes: %+v, want %+v", got, idB)
	}
	second.restart(t, ctx)
	if got := read(t, ctx, second.driver(t)); got != idB {
		t.Errorf("after a daemon restart: %+v, want %+v", got, idB)
	}
}

func plant(t *testing.T, ctx context.Context, d dd.Driver) dd.HostIdentity {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	if err := d.PlantHostIdentity(ctx, "id-"+hex.EncodeToString(b)); err != nil {
		t.Fatal(err)
	}
	return read(t, ctx, d)
}

func read(t *testing.T, ctx context.Context, d dd.Driver) dd.HostIdentity {
	t.Helper()
	id, err := d.HostIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func removeImages(t *testing.T, cli *client.Client, repo string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("reference", repo)})
	if err != nil {
		t.Errorf("cleanup: list %s: %v", repo, err)
		return
	}
	for _, img := range list.Items {
		if _, err := cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true}); err != nil {
			t.Errorf("cleanup: remove %s: %v", img.ID, err)
		}
	}
}

// daemon is a second dockerd with its own socket, data root, exec root and bridge.
type daemon struct {
	dir, host string
	args      []string
	cmd       *exec.Cmd
}

// startDaemon starts a second daemon, removed with its data and bridge at cleanup.
//
// Note: its own bridge, never --bridge=none: a daemon started without a bridge
// deletes the interface docker0, the default daemon's.
func startDaemon(t *testing.T, ctx context.Context, runID string) *daemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "sbxid-")
	if err != nil {
		t.Fatal(err)
	}
	bridge := "sbxid" + runID[:6]
	cidr := fmt.Sprintf("10.213.%d.1/24", 1+int(runID[0])%250)
	for _, args := range [][]string{{"link", "add", bridge, "type", "bridge"}, {"addr", "add", cidr, "dev", bridge}, {"link", "set", bridge, "up"}} {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	config := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(config, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &daemon{dir: dir, host: "unix://" + filepath.Join(dir, "docker.sock"), args: []string{
		"--host", "unix://" + filepath.Join(dir, "docker.sock"), "--config-file", config,
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "--bridge", bridge,
		"--iptables=false", "--ip-masq=false", "--label", drivertest.TestLabel + "=" + runID,
	}}
	t.Cleanup(func() {
		d.stop(t)
		_ = exec.Command("ip", "link", "del", bridge).Run()
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	d.start(t, ctx)
	return d
}

func (d *daemon) start(t *testing.T, ctx context.Context) {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(d.dir, "dockerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	d.cmd = exec.Command("dockerd", d.args...)
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cli, err := client.New(client.WithHost(d.host))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err == nil {
			return
		} else if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(d.dir, "dockerd.log"))
			t.Fatalf("second daemon did not answer within 30s: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the daemon with SIGTERM (SIGKILL after 30s) and waits for it.
func (d *daemon) stop(t *testing.T) {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	// Note: the exit status of a daemon told to stop says nothing to the test.
	select {
	case err := <-done:
		_ = err
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		err := <-done
		t.Errorf("second daemon ignored SIGTERM for 30s; killed (%v)", err)
	}
	d.cmd = nil
}

func (d *daemon) restart(t *testing.T, ctx context.Context) {
	t.Helper()
	d.stop(t)
	d.start(t, ctx)
}

// driver is a new driver for the daemon (a new manager process), closed at cleanup.
func (d *daemon) driver(t *testing.T) dd.Driver {
	t.Helper()
	drv, err := dd.New(dd.WithHost(d.host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drv.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("close: %v", err)
		}
	})
	return drv
}
