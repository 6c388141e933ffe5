package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// fleetPrefix names the fleet test's daemons' files under /run.
const fleetPrefix = "sbxf-"

// fleetHost is a Docker daemon of the fleet and its DockerHost: the main one
// (local, d nil), or one the test runs (testenv.Dockerd).
type fleetHost struct {
	name string // its DockerHost
	d    *testenv.Dockerd
}

// fleetDaemon is the daemon the fleet test names name (sbxf-<run>-<n>): its files,
// its data root, its bridge, and netBridge, the bridge of the e2e network on it.
func fleetDaemon(name string) (d *testenv.Dockerd, netBridge string) {
	id := strings.ReplaceAll(strings.TrimPrefix(name, fleetPrefix), "-", "")
	d = testenv.NewDockerd(name, "sbxf"+id, "", "/var/lib/"+name, filepath.Join(binDir, name+".log"))
	// Note: the containers go on running while dockerd is down, as on a host whose
	// daemon crashed; they are the ones it finds again.
	d.Flags = []string{"--live-restore"}
	return d, "sbxn" + id
}

// forward lets the containers on bridge reach each other (op -I) or no longer
// (op -D): the main daemon drops forwarded traffic of bridges it does not know
// (iptables FORWARD policy DROP, which bridged frames pass through), and the
// fleet's daemons manage no iptables rules of their own.
func forward(op, bridge string) error {
	out, err := exec.Command("iptables", "-w", op, "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT").CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s FORWARD for %s: %w: %s", op, bridge, err, out)
	}
	return nil
}

// removeStaleFleet removes the daemons a killed earlier run of the test left.
func removeStaleFleet() {
	for _, name := range testenv.StaleDockerds(fleetPrefix) {
		d, netBridge := fleetDaemon(name)
		for range 10 { // the rule, as often as it was inserted
			if forward("-D", netBridge) != nil {
				break
			}
		}
		d.Teardown()
		_ = exec.Command("ip", "link", "del", netBridge).Run()
	}
}

// startFleetHosts starts n Docker daemons beside the main one, in parallel, each
// with the engine images and the e2e network on a subnet of its own; the test's
// cleanup removes them with all they hold.
func startFleetHosts(t *testing.T, n int) []*fleetHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the fleet test runs Docker daemons of its own: it needs root")
	}
	removeStaleFleet()
	subnets := freeSubnets(t, 2*n)
	hosts := make([]*fleetHost, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		d, netBridge := fleetDaemon(fmt.Sprintf("%s%s-%d", fleetPrefix, runID, i))
		d.Subnet = subnets[2*i] + ".1/24"
		hosts[i] = &fleetHost{name: fmt.Sprintf("fleet-%d-%s", i, runID), d: d}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("dockerd %s log (last 20 lines):\n%s", d.Name, d.LogTail(20))
			}
			_ = forward("-D", netBridge)
			d.Teardown()
			_ = exec.Command("ip", "link", "del", netBridge).Run()
		})
		wg.Go(func() { errs[i] = bringUp(d, netBridge, subnets[2*i+1]+".0/24") })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return hosts
}

// bringUp starts d with the redis image and the e2e network (on subnet, its
// bridge named netBridge).
func bringUp(d *testenv.Dockerd, netBridge, subnet string) error {
	if err := d.CreateBridge(); err != nil {
		return err
	}
	if err := d.Start(d.DataRoot); err != nil {
		return err
	}
	if err := d.LoadImages([]string{images.Plain["redis"]}); err != nil {
		return err
	}
	out, err := exec.Command("docker", "-H", d.Host(), "network", "create", "--label", testLabel+"="+runID,
		"--subnet", subnet, "-o", "com.docker.network.bridge.name="+netBridge, network).CombinedOutput()
	if err != nil {
		return fmt.Errorf("creating the e2e network on %s: %w: %s", d.Name, err, out)
	}
	return forward("-I", netBridge)
}

// freeSubnets picks n /24 subnets of 10.214.0.0/16 that no interface of this
// machine uses (a.b.c, without the last octet).
func freeSubnets(t *testing.T, n int) []string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "addr").Output()
	if err != nil {
		t.Fatal(err)
	}
	var free []string
	for c := 10; c < 250 && len(free) < n; c++ {
		s := fmt.Sprintf("10.214.%d", c)
		if !strings.Contains(string(out), " "+s+".") {
			free = append(free, s)
		}
	}
	if len(free) < n {
		t.Fatalf("no %d free subnets in 10.214.0.0/16", n)
	}
	return free
}

// args are docker CLI arguments for this host.
func (h *fleetHost) args(args ...string) []string {
	if h.d == nil {
		return args
	}
	return append([]string{"-H", h.d.Host()}, args...)
}

// docker runs the docker CLI against this host, failing the test on an error.
func (h *fleetHost) docker(t *testing.T, args ...string) string {
	t.Helper()
	return docker(t, h.args(args...)...)
}

// containers lists this host's containers that carry every label (key=value).
func (h *fleetHost) containers(t *testing.T, labels ...string) []dockerContainer {
	t.Helper()
	args := []string{"ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}} {{.State}}"}
	for _, l := range labels {
		args = append(args, "--filter", "label="+l)
	}
	var out []dockerContainer
	for _, l := range strings.Split(strings.TrimSpace(h.docker(t, args...)), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			out = append(out, dockerContainer{f[0], f[1], f[2]})
		}
	}
	return out
}

// ids are the containers' IDs, sorted.
func ids(cs []dockerContainer) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.id)
	}
	slices.Sort(out)
	return out
}

// startOwnerOn starts a stand-in agent container on h's e2e network; the
// daemon's teardown removes it.
func (h *fleetHost) startOwnerOn(t *testing.T, name string) {
	t.Helper()
	h.docker(t, "run", "-d", "--name", name, "--label", testLabel+"="+runID, "--network", network, "--tmpfs", "/data",
		"--entrypoint", "sleep", images.Plain["redis"], "infinity")
}
