package dockerdriver_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/drivertest"
)

// TestContract runs the driver contract against the real daemon. It is
// skipped only when SANDBOX_SKIP_DOCKER=1.
func TestContract(t *testing.T) {
	fx := drivertest.NewDockerFixture(t)
	t.Run("contract", func(t *testing.T) {
		drivertest.RunContract(t, fx.NewDriver)
	})
	t.Run("kernel", func(t *testing.T) { testKernelEnforcesSpec(t, fx) })
	t.Run("negotiation", func(t *testing.T) { testNegotiation(t, fx) })
	t.Run("refusals", func(t *testing.T) { testRefusals(t, fx) })
}

// testRefusals: what the daemon refuses for a container's config is ErrInvalid,
// whatever the HTTP status (a CPU count above the host's is a 400 at create; a CPU
// quota under runc's 1ms floor a 500 at start), carries the daemon's words, and
// leaves nothing behind. Retrying cannot fix it, so the controller stalls on it.
func testRefusals(t *testing.T, fx *drivertest.DockerFixture) {
	t.Parallel()
	d, env := fx.NewDriver(t, drivertest.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name     string
		nanoCPUs int64
		words    string
	}{
		{"cpu above the host's", int64(runtime.NumCPU()+1) * 1e9, "CPUs available"},
		{"cpu under the quota floor", 5e6, "cpu.cfs_quota_us"},
	} {
		labels := maps.Clone(env.Labels())
		labels[drivertest.OwnerLabel] = "refusal"
		s := dd.ContainerSpec{Name: "sdt-refused-" + fx.RunID + "-" + strings.ReplaceAll(tc.name, " ", "-")[:7] + fmt.Sprint(tc.nanoCPUs%1000),
			Image: env.Image(), Labels: labels, OwnerLabel: drivertest.OwnerLabel,
			Cmd: env.Command(drivertest.Script{Sleep: drivertest.Forever}), NanoCPUs: tc.nanoCPUs}
		_, err := d.CreateContainer(ctx, s)
		if !errors.Is(err, dd.ErrInvalid) || !strings.Contains(err.Error(), tc.words) {
			t.Errorf("%s: CreateContainer error %v, want ErrInvalid with the daemon's words %q", tc.name, err, tc.words)
		}
		if _, err := d.Inspect(ctx, s.Name); !errors.Is(err, dd.ErrNotFound) {
			t.Errorf("%s: the refused container is left behind (inspect: %v)", tc.name, err)
		}
	}
}

// testKernelEnforcesSpec checks what inspect cannot: that the limits and
// no-new-privileges reach the kernel.
func testKernelEnforcesSpec(t *testing.T, fx *drivertest.DockerFixture) {
	t.Parallel()
	d, env := fx.NewDriver(t, drivertest.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	labels := maps.Clone(env.Labels())
	labels[drivertest.OwnerLabel] = "kernel"
	s := dd.ContainerSpec{
		Name:        "sdt-kernel-" + fx.RunID,
		Image:       env.Image(),
		Labels:      labels,
		OwnerLabel:  drivertest.OwnerLabel,
		Cmd:         env.Command(drivertest.Script{Sleep: drivertest.Forever}),
		MemoryBytes: 64 << 20,
		NanoCPUs:    250_000_000,
		PidsLimit:   32,
		Tmpfs:       map[string]string{"/scratch": "rw,size=8m"},
		CapAdd:      []string{"CHOWN"},
	}
	if _, err := d.CreateContainer(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cmd, want string }{
		{"grep NoNewPrivs /proc/self/status", "NoNewPrivs:\t1"},
		// Every capability dropped but CHOWN (bit 0), even for root.
		{"grep CapEff /proc/self/status", "CapEff:\t0000000000000001"},
		{"cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.swap.max", "67108864"},
		// cgroup v1 paths, as on Debian's Docker 20.10; v2 has memory.max etc.
		{"cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max", "67108864"},
		{"cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max", "32"},
		{"cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max", "25000"},
		{"grep ' /scratch ' /proc/mounts", "tmpfs /scratch tmpfs rw"},
	} {
		r, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: []string{"sh", "-c", tc.cmd}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Stdout, tc.want) {
			t.Errorf("%s: %q (stderr %q), want %q", tc.cmd, r.Stdout, r.Stderr, tc.want)
		}
	}
}

// testNegotiation checks that the client spoke the daemon's version, not its own.
func testNegotiation(t *testing.T, fx *drivertest.DockerFixture) {
	t.Parallel()
	d, _ := fx.NewDriver(t, drivertest.Config{})
	info, err := d.Ping(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	v, err := fx.Client.ServerVersion(t.Context(), client.ServerVersionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.APIVersion != v.APIVersion || info.ServerVersion != v.Version {
		t.Errorf("Ping = %+v, want API %s of server %s", info, v.APIVersion, v.Version)
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	d, err := dd.New(dd.WithHost("unix:///nonexistent/docker.sock"), dd.WithEventBackoff(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, dd.ErrUnavailable) || !strings.HasPrefix(err.Error(), what+": ") {
			t.Errorf("%s: %v, want ErrUnavailable saying %q", what, err, what)
		}
	}
	_, err = d.Ping(ctx)
	check("ping", err)
	_, err = d.Inspect(ctx, "x1")
	check("inspect x1", err)
	_, err = d.List(ctx, nil)
	check("list", err)
	check("remove x1", d.Remove(ctx, "x1", time.Second))
	err = d.PullImage(ctx, "busybox", nil)
	check("image inspect busybox", err)

	// The event stream says once that it is behind, then keeps retrying,
	// quietly, until ctx ends.
	ectx, ecancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer ecancel()
	var got []dd.EventType
	for e := range d.Events(ectx, dd.EventFilter{}) {
		got = append(got, e.Type)
	}
	if len(got) != 1 || got[0] != dd.EventLost {
		t.Errorf("events %v from an absent daemon, want one %s", got, dd.EventLost)
	}
}
