package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// replicaLease are the manager flags of replicas that share hosts, with a short
// Lease so that a takeover takes seconds.
var replicaLease = []string{"--docker-host-name=", "--leader-elect",
	"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms"}

// fakeHosts serves n fake Docker daemons on unix sockets and registers each as
// a DockerHost; everything goes when the test ends.
func fakeHosts(t *testing.T, n int) (names []string, servers map[string]*fakedocker.Server) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fleet") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	servers = map[string]*fakedocker.Server{}
	for i := range n {
		name := fmt.Sprintf("fake-%d-%s", i, runID)
		srv := fakedocker.New(fakedocker.WithPullAny(), fakedocker.WithAnyNetwork(), fakedocker.WithDaemon(name, name),
			fakedocker.WithExecHook(fakedocker.EngineAnswers))
		if err := srv.Listen("unix", filepath.Join(dir, fmt.Sprintf("%d.sock", i))); err != nil {
			t.Fatal(err)
		}
		servers[name] = srv
		names = append(names, name)
		kubectl(t, "apply", "-f", writeTemp(t, fmt.Sprintf(
			"apiVersion: sandbox.roboco.io/v1alpha1\nkind: DockerHost\nmetadata: {name: %s}\nspec: {endpoint: %q}\n", name, srv.Host())))
	}
	t.Cleanup(func() {
		for _, name := range names {
			_, _ = env.Kubectl("delete", "dockerhost", name, "--wait=false")
			_, _ = env.Kubectl("patch", "dockerhost", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
			servers[name].Close()
		}
		_ = os.RemoveAll(dir)
	})
	return names, servers
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "object.yaml")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func hostManager(t *testing.T, host string) string {
	t.Helper()
	return kubectl(t, "get", "dockerhost", host, "-o", "jsonpath={.status.manager}")
}

// placedSandbox applies a one-redis Sandbox bound to host and waits until it is Ready.
func placedSandbox(t *testing.T, ns, name, host string) {
	t.Helper()
	applyYAML(t, ns, fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\n"+
		"spec: {agentID: %s-%s, dockerHost: %s, owner: {policy: None}, services: [{engine: redis}]}\n", name, name, runID, host))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=60s", "sandbox/"+name)
}

// mutations counts the calls that change a host, made by the manager replica id.
func mutations(srv *fakedocker.Server, id string) int64 {
	var n int64
	for endpoint, count := range srv.Stats().ByAgent["sandbox-controller/"+id] {
		if strings.HasPrefix(endpoint, "POST") || strings.HasPrefix(endpoint, "PUT") || strings.HasPrefix(endpoint, "DELETE") {
			n += count
		}
	}
	return n
}

// TestFleetReplicasShareHosts: two manager replicas share two Docker hosts, one
// Lease each. One frozen past its Lease (SIGSTOP) has its host taken over, and
// after SIGCONT changes nothing on either host; one killed (SIGKILL) while it
// holds hosts has them taken over. No service is ever created twice.
func TestFleetReplicasShareHosts(t *testing.T) {
	ns := newNamespace(t, "replicas")
	onlyOwnHosts(t)
	hosts, servers := fakeHosts(t, 2)
	flags := append([]string{"--leader-election-namespace", ns}, replicaLease...)
	a, b := startManager(t, flags...), startManager(t, flags...)
	var ids []string
	// Note: two managers starting at once take tens of seconds at a load of 30
	// (make test runs the chaos suite beside this one).
	testenv.WaitFor(t, 90*time.Second, poll, "each replica driving one host", func() bool {
		ids = []string{hostManager(t, hosts[0]), hostManager(t, hosts[1])}
		return ids[0] != "" && ids[1] != "" && ids[0] != ids[1]
	})
	placedSandbox(t, ns, "first", hosts[0])
	placedSandbox(t, ns, "second", hosts[1])

	// Freeze the replica driving hosts[0] in the middle of a pass (waiting for a
	// container's start): the other takes the host once the Lease expires and
	// finishes that Sandbox; the frozen one, resumed, must not go on with its pass.
	frozen, other, idA := a, b, ids[0]
	if !tookLease(a, hosts[0]) {
		frozen, other = b, a
	}
	srv := servers[hosts[0]]
	const start = "POST /containers/{id}/start"
	srv.SetDelay(start, 3*time.Second)
	starts := srv.Stats().Requests[start]
	applyYAML(t, ns, fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: Sandbox\nmetadata: {name: mid-pass}\n"+
		"spec: {agentID: mid-pass-%s, dockerHost: %s, owner: {policy: None}, services: [{engine: redis}]}\n", runID, hosts[0]))
	testenv.WaitFor(t, 30*time.Second, 10*time.Millisecond, "a container start in flight", func() bool {
		return srv.Stats().Requests[start] > starts
	})
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	srv.SetDelay(start, 0)
	testenv.WaitFor(t, 30*time.Second, poll, "one replica driving both hosts", func() bool {
		m0, m1 := hostManager(t, hosts[0]), hostManager(t, hosts[1])
		return m0 == m1 && m0 != idA
	})
	t.Logf("a frozen replica's host taken over %s after SIGSTOP (Lease 4s)", time.Since(stopped).Round(100*time.Millisecond))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=60s", "sandbox/mid-pass")
	placedSandbox(t, ns, "while-frozen", hosts[0])
	placedSandbox(t, ns, "while-frozen-2", hosts[1])
	before := map[string]int64{}
	for name, srv := range servers {
		before[name] = mutations(srv, idA)
	}
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Note: a frozen leader finds its leader election lost and exits, as a Pod
	// would, to be restarted: so is it here.
	if frozen.ended(5 * time.Second) {
		startManager(t, flags...)
	}
	testenv.WaitFor(t, 30*time.Second, poll, "the replicas sharing the hosts again", func() bool {
		return hostManager(t, hosts[0]) != hostManager(t, hosts[1])
	})
	for name, srv := range servers {
		if got := mutations(srv, idA) - before[name]; got != 0 {
			t.Errorf("the replica that resumed after losing its Lease made %d changing calls to %s: %v", got, name, srv.Stats().ByAgent["sandbox-controller/"+idA])
		}
	}

	// SIGKILL the replica that drove both hosts meanwhile: the other takes its host.
	other.kill()
	killed := time.Now()
	testenv.WaitFor(t, 30*time.Second, poll, "the survivor driving both hosts", func() bool {
		m0, m1 := hostManager(t, hosts[0]), hostManager(t, hosts[1])
		return m0 == m1 && m0 != ""
	})
	t.Logf("a killed replica's hosts taken over %s after SIGKILL (Lease 4s)", time.Since(killed).Round(100*time.Millisecond))
	placedSandbox(t, ns, "after-kill", hosts[0])
	for _, name := range []string{"first", "second", "mid-pass", "while-frozen", "while-frozen-2"} {
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=30s", "sandbox/"+name)
	}
	for name, srv := range servers {
		if st := srv.Stats(); st.Duplicates != 0 {
			t.Errorf("%s: %d duplicate creates: %+v", name, st.Duplicates, st.DuplicateList)
		}
	}
	kubectl(t, "delete", "sandboxes", "--all", "-n", ns, "--timeout=60s")
	for name, srv := range servers {
		if n := len(srv.Stats().Containers); n != 0 {
			t.Errorf("%s: containers left after every Sandbox went: %v", name, srv.Stats().Containers)
		}
	}
}

// onlyOwnHosts removes the DockerHosts earlier tests left (the implicit local
// that every manager started without --docker-host-name= makes): the replicas
// share every registered host, and with a third one two replicas take 2 + 1 of
// them, the first two by name, so this test's two hosts would both go to one
// replica. No manager runs between tests, so their finalizers are let go here;
// the next test's manager makes local again.
func onlyOwnHosts(t *testing.T) {
	t.Helper()
	for _, obj := range strings.Fields(kubectl(t, "get", "dockerhosts", "-o", "name")) {
		kubectl(t, "patch", obj, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		kubectl(t, "delete", obj, "--ignore-not-found", "--timeout=60s")
	}
}

// tookLease says whether the manager's log shows it taking host's Lease.
func tookLease(m *manager, host string) bool {
	for _, line := range strings.Split(m.logText(), "\n") {
		if strings.Contains(line, "Took the Lease of a Docker host") && strings.Contains(line, `"`+host+`"`) {
			return true
		}
	}
	return false
}
