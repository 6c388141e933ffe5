package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// fleetRun is what the steps of TestFleet share.
type fleetRun struct {
	ns    string
	local *fleetHost // the main daemon, the manager's own (DockerHost local)
	b, c  *fleetHost // daemons of the test's own: zone=b; zone=c with capacity for one Sandbox
	hosts []*fleetHost
	m     *manager
	// volumes dangling on the main daemon before the test.
	volumes map[string]bool
}

// TestFleet runs one manager over three Docker daemons (the main one, the
// implicit DockerHost local, and two started here and registered with kubectl
// apply) and proves placement beside the owner, by selector and by capacity; a
// host killed and brought back; a manager killed while it drives them; and that
// nothing is left on any host.
func TestFleet(t *testing.T) {
	started := time.Now()
	extra := startFleetHosts(t, 2)
	t.Logf("two more dockerds with the redis image: %s", time.Since(started).Round(100*time.Millisecond))
	f := &fleetRun{ns: newNamespace(t, "fleet"), local: &fleetHost{name: "local"}, b: extra[0], c: extra[1],
		volumes: testenv.DanglingVolumes(t)}
	f.hosts = []*fleetHost{f.local, f.b, f.c}
	// Note: registered before the manager starts, so it runs once the managers have
	// stopped: what a failed step left bound is let go, for the next tests' managers.
	t.Cleanup(func() { f.release(t) })
	f.m = startManager(t)
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"register two DockerHosts", f.register},
		{"beside the owner", f.besideOwner},
		{"owner on two hosts", f.ownerTwice},
		{"selector", f.selector},
		{"capacity", f.capacity},
		{"host killed and back", f.hostKilled},
		{"manager killed", f.managerKilled},
		{"nothing left", f.nothingLeft},
	} {
		start := time.Now()
		step.run(t)
		t.Logf("%s: passed in %s", step.name, time.Since(start).Round(100*time.Millisecond))
	}
	t.Logf("TestFleet took %s", time.Since(started).Round(100*time.Millisecond))
}

// register applies a DockerHost for each daemon of the test's own and waits until
// every host is Ready with an identity of its own.
func (f *fleetRun) register(t *testing.T) {
	kubectl(t, "apply", "-f", writeTemp(t, dockerHostYAML(f.b, "b", 0)))
	kubectl(t, "apply", "-f", writeTemp(t, dockerHostYAML(f.c, "c", 1)))
	seen := map[string]string{}
	for _, h := range f.hosts {
		waitHost(t, h, "True")
		id := kubectl(t, "get", "dockerhost", h.name, "-o", "jsonpath={.status.identity.id}")
		if id == "" || seen[id] != "" {
			t.Fatalf("DockerHost %s: identity %q (already %s's)", h.name, id, seen[id])
		}
		seen[id] = h.name
	}
}

// besideOwner: a Sandbox of an agent running on b lands on b, and its Secret
// works from b's network.
func (f *fleetRun) besideOwner(t *testing.T) {
	agent := "beside-" + runID
	f.b.startOwnerOn(t, "roboco-agent-"+agent)
	applyYAML(t, f.ns, sandboxYAML("beside", agent, "{}", "[{engine: redis}]"))
	kubectl(t, "wait", "-n", f.ns, "--for=condition=Ready", "sandbox/beside", "--timeout=120s")
	f.boundTo(t, "beside", f.b)
	if got, want := kubectl(t, "get", "sandbox", "beside", "-n", f.ns, "-o", "jsonpath={.status.dockerHost.id}"),
		kubectl(t, "get", "dockerhost", f.b.name, "-o", "jsonpath={.status.identity.id}"); got != want {
		t.Errorf("status.dockerHost.id = %q, want %s's identity %q", got, f.b.name, want)
	}
	vars := secretData(t, f.ns, "beside-sandbox")
	out := strings.TrimSpace(f.b.docker(t, "exec", "-e", "REDISCLI_AUTH="+vars["ROBOCO_TEST_REDIS_PASSWORD"], "roboco-agent-"+agent,
		"redis-cli", "--no-auth-warning", "-h", vars["ROBOCO_TEST_REDIS_HOST"], "-p", vars["ROBOCO_TEST_REDIS_PORT"], "PING"))
	if out != "PONG" {
		t.Errorf("redis-cli from the agent on %s, with the Secret's host %s and password: %q, want PONG", f.b.name, vars["ROBOCO_TEST_REDIS_HOST"], out)
	}
}

// ownerTwice: an owner container running on two hosts is ambiguous: the Sandbox
// is not placed and says why.
func (f *fleetRun) ownerTwice(t *testing.T) {
	agent := "twice-" + runID
	f.b.startOwnerOn(t, "roboco-agent-"+agent)
	f.c.startOwnerOn(t, "roboco-agent-"+agent)
	applyYAML(t, f.ns, sandboxYAML("twice", agent, "{}", "[{engine: redis}]"))
	f.waitReady(t, "twice", "False/Unschedulable")
	msg := kubectl(t, "get", "sandbox", "twice", "-n", f.ns, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
	if !strings.Contains(msg, f.b.name) || !strings.Contains(msg, f.c.name) {
		t.Errorf("Unschedulable says %q, want both hosts named", msg)
	}
	if h := f.specHost(t, "twice"); h != "" {
		t.Errorf("placed on %s with its owner on two hosts", h)
	}
	kubectl(t, "delete", "sandbox", "twice", "-n", f.ns, "--timeout=60s")
	f.b.docker(t, "rm", "-fv", "roboco-agent-"+agent)
	f.c.docker(t, "rm", "-fv", "roboco-agent-"+agent)
}

// selector: a Sandbox without owner lands on the host its selector admits.
func (f *fleetRun) selector(t *testing.T) {
	applyYAML(t, f.ns, placedSandboxYAML("picked", "dockerHostSelector: {matchLabels: {zone: c}}"))
	kubectl(t, "wait", "-n", f.ns, "--for=condition=Ready", "sandbox/picked", "--timeout=120s")
	f.boundTo(t, "picked", f.c)
}

// capacity: c holds one Sandbox; a second one for c is Unschedulable until its
// capacity is raised.
func (f *fleetRun) capacity(t *testing.T) {
	applyYAML(t, f.ns, placedSandboxYAML("waiting", "dockerHostSelector: {matchLabels: {zone: c}}"))
	f.waitReady(t, "waiting", "False/Unschedulable")
	if h := f.specHost(t, "waiting"); h != "" {
		t.Fatalf("placed on %s beyond its capacity", h)
	}
	kubectl(t, "patch", "dockerhost", f.c.name, "--type=merge", "-p", `{"spec":{"capacity":{"sandboxes":2}}}`)
	kubectl(t, "wait", "-n", f.ns, "--for=condition=Ready", "sandbox/waiting", "--timeout=120s")
	f.boundTo(t, "waiting", f.c)
	waitSeen(t, time.Minute, f.c.name+" to count 2 Sandboxes", func() (bool, string) {
		n, _ := env.Kubectl("get", "dockerhost", f.c.name, "-o", "jsonpath={.status.allocated.sandboxes}")
		return n == "2", "allocated.sandboxes " + n
	})
}

func dockerHostYAML(h *fleetHost, zone string, capacity int) string {
	y := fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: DockerHost\nmetadata:\n  name: %s\n  labels: {zone: %s, %s: %q}\nspec:\n  endpoint: %s\n",
		h.name, zone, testLabel, runID, h.d.Host())
	if capacity > 0 {
		y += fmt.Sprintf("  capacity: {sandboxes: %d}\n", capacity)
	}
	return y
}
