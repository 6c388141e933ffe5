package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/roboco-sandbox/sandbox-controller/internal/testclients"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var sandboxes = schema.GroupVersionResource{Group: "sandbox.roboco.io", Version: "v1alpha1", Resource: "sandboxes"}

// connectAll proves every service of a Ready Sandbox accepts its Secret's credentials.
func connectAll(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	secret := secretData(t, ns, name+"-sandbox")
	services := strings.Fields(kubectl(t, "get", "sandbox", name, "-n", ns, "-o",
		`jsonpath={range .status.services[*]}{.engine}={.containerName}{" "}{end}`))
	if len(services) == 0 {
		t.Fatalf("sandbox %s/%s reports no services", ns, name)
	}
	for _, s := range services {
		engine, container, _ := strings.Cut(s, "=")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := testclients.Connect(ctx, engine, containerIP(t, container), secret)
		cancel()
		if err != nil {
			t.Errorf("%s refused the Secret's credentials: %v", engine, err)
		}
	}
	return secret
}

// TestKubectlUser: apply the samples, wait for Ready, connect, delete, nothing left.
func TestKubectlUser(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "kubectl")
	for _, sample := range []struct{ file, name string }{
		{"sandbox_v1alpha1_postgres.yaml", "demo-pg"},
		{"sandbox_v1alpha1_trio.yaml", "demo-trio"},
	} {
		t.Run(sample.name, func(t *testing.T) {
			manifest, agentID := sampleManifest(t, sample.file)
			// The samples' Sandboxes live as long as their agent container.
			startOwner(t, "roboco-agent-"+agentID)
			start := time.Now()
			applyYAML(t, ns, manifest)
			kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/"+sample.name, "--timeout=180s")
			t.Logf("kubectl apply → Ready: %s", time.Since(start).Round(time.Millisecond))

			table := kubectl(t, "get", "sandboxes", "-n", ns, sample.name)
			if !strings.Contains(table, "True") || !strings.Contains(table, "Ready") {
				t.Errorf("kubectl get sandboxes shows:\n%s", table)
			}
			connectAll(t, ns, sample.name)
			urlsWork(t, ns, sample.name, sample.name == "demo-trio")
			uid := kubectl(t, "get", "sandbox", sample.name, "-n", ns, "-o", "jsonpath={.metadata.uid}")
			volumesBefore := testenv.DanglingVolumes(t)

			kubectl(t, "delete", "-n", ns, "sandbox", sample.name, "--timeout=60s")
			if left := dockerPS(t, "sandbox.roboco.io/uid="+uid); len(left) > 0 {
				t.Errorf("containers left after kubectl delete: %v", left)
			}
			if _, err := env.Kubectl("get", "secret", "-n", ns, sample.name+"-sandbox"); err == nil {
				t.Error("the Secret outlived its Sandbox")
			}
			testenv.NoVolumesLeaked(t, volumesBefore)
		})
	}
}

// TestOrchestrator: a client-go program creates a Sandbox, watches it until Ready and
// reads the Secret it would inject into its agent.
// agentCheck is the agent examples/orchestrator starts in TestOrchestrator: it logs
// in to postgres and redis with nothing but the variables it was given.
const agentCheck = `set -eu
PGPASSWORD=$ROBOCO_TEST_DB_PASSWORD psql -X -q -tA -h "$ROBOCO_TEST_DB_HOST" -p "$ROBOCO_TEST_DB_PORT" \
  -U "$ROBOCO_TEST_DB_USER" -d "$ROBOCO_TEST_DB_ADMIN_DB" -c 'select 1' | grep -qx 1
exec 3<>"/dev/tcp/$ROBOCO_TEST_REDIS_HOST/$ROBOCO_TEST_REDIS_PORT"
printf 'AUTH %s\r\nPING\r\n' "$ROBOCO_TEST_REDIS_PASSWORD" >&3
read -r -t 5 auth <&3; read -r -t 5 ping <&3
[ "${ping%$'\r'}" = +PONG ] || { echo "redis said: $auth $ping"; exit 3; }
echo "agent: postgres and redis answer"`

// TestOrchestrator runs examples/orchestrator, the Go example an agent platform
// starts from: typed client, server-side apply, a wait that survives dropped
// watches, the Secret into an agent container, the Sandbox deleted at the end.
func TestOrchestrator(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "orchestrator")
	agent := "orch-" + runID
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-fv", "roboco-agent-"+agent).Run() })
	cmd := exec.Command(filepath.Join(binDir, "orchestrator"), "--kubeconfig", env.Kubeconfig(), "--namespace", ns,
		"--agent", agent, "--engines", "postgres,redis", "--network", network, "--timeout", "3m",
		"--image", images.Plain["postgres"], "--", "bash", "-c", agentCheck)
	out, err := cmd.CombinedOutput()
	t.Logf("orchestrator:\n%s", out)
	if err != nil {
		t.Fatalf("the orchestrator failed: %v", err)
	}
	for _, want := range []string{"Ready (postgres,redis)", "agent: postgres and redis answer", "Sandbox deleted"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the orchestrator did not say %q", want)
		}
	}
	if left := dockerPS(t, "sandbox.roboco.io/namespace="+ns); len(left) > 0 {
		t.Errorf("containers left after the orchestrator ended: %v", left)
	}
}

// TestOwnerGone: removing the agent container deletes its Sandbox after the grace period.
func TestOwnerGone(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "owner")
	owner := "sbx-e2e-agent-" + runID
	volumesBefore := testenv.DanglingVolumes(t)
	startOwner(t, owner)
	applyYAML(t, ns, sandboxYAML("owned", "owned-"+runID, "{containerName: "+owner+", gracePeriod: 5s}", "[{engine: redis}]"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/owned", "--timeout=120s")
	uid := kubectl(t, "get", "sandbox", "owned", "-n", ns, "-o", "jsonpath={.metadata.uid}")
	docker(t, "rm", "-f", owner)
	removed := time.Now()
	testenv.WaitFor(t, time.Minute, poll, "the Sandbox to be deleted", func() bool {
		_, err := env.Kubectl("get", "sandbox", "owned", "-n", ns)
		return err != nil
	})
	testenv.WaitFor(t, 30*time.Second, poll, "its containers to be gone", func() bool {
		return len(dockerPS(t, "sandbox.roboco.io/uid="+uid)) == 0
	})
	gone := time.Since(removed)
	if gone < 5*time.Second {
		t.Errorf("deleted %s after the owner left, before the 5s grace period", gone)
	}
	t.Logf("owner removed → containers gone: %s (grace 5s)", gone.Round(time.Millisecond))
	testenv.NoVolumesLeaked(t, volumesBefore)
}

// TestKilledManagerConverges: SIGKILL the manager while 5 Sandboxes provision; a new
// one finishes them with exactly one container per service and the first credentials.
func TestKilledManagerConverges(t *testing.T) {
	m := startManager(t)
	ns := newNamespace(t, "crash")
	const n = 5
	for i := range n {
		applyYAML(t, ns, sandboxYAML(fmt.Sprintf("crash-%d", i), fmt.Sprintf("crash-%d-%s", i, runID),
			"{policy: None}", "[{engine: postgres}, {engine: redis}]"))
	}
	// Kill as soon as the first containers exist, before all are Ready.
	testenv.WaitFor(t, time.Minute, poll, "the first containers", func() bool {
		return len(dockerPS(t, "sandbox.roboco.io/instance="+instance, "sandbox.roboco.io/namespace="+ns)) > 0
	})
	m.kill()
	// Credentials published before the kill must survive it.
	secrets := map[string]map[string]string{}
	for i := range n {
		name := fmt.Sprintf("crash-%d", i)
		if _, err := env.Kubectl("get", "secret", "-n", ns, name+"-sandbox"); err == nil {
			secrets[name] = secretData(t, ns, name+"-sandbox")
		}
	}
	if len(secrets) == 0 {
		t.Fatal("no Secret existed when containers did: credentials must come first")
	}
	ready := strings.Count(kubectl(t, "get", "sandboxes", "-n", ns, "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}`), "True")
	t.Logf("killed the manager with %d of %d Sandboxes Ready, %d with credentials", ready, n, len(secrets))

	startManager(t)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox", "--all", "--timeout=180s")
	for i := range n {
		name := fmt.Sprintf("crash-%d", i)
		if got := secretData(t, ns, name+"-sandbox"); secrets[name] != nil && !equal(got, secrets[name]) {
			t.Errorf("%s: credentials changed across the restart", name)
		}
		containers := dockerPS(t, "sandbox.roboco.io/namespace="+ns, "sandbox.roboco.io/name="+name)
		if len(containers) != 2 {
			t.Errorf("%s: %d containers, want exactly 2: %v", name, len(containers), containers)
		}
		connectAll(t, ns, name)
	}
	kubectl(t, "delete", "-n", ns, "sandboxes", "--all", "--timeout=120s")
}

// TestLeaderElection: of two managers only the leader places Sandboxes, and only
// one drives the Docker host (its Lease); when the leader dies, the other takes over.
func TestLeaderElection(t *testing.T) {
	leaderArgs := []string{"--leader-elect", "--leader-election-namespace", "default",
		"--leader-election-id", "e2e-" + runID, "--leader-election-lease-duration", "4s",
		"--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms"}
	a := startManager(t, leaderArgs...)
	b := startManager(t, leaderArgs...)
	ns := newNamespace(t, "leader")

	holder := func() string {
		out, err := env.Kubectl("get", "lease", "-n", "default", "e2e-"+runID, "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			return ""
		}
		return out
	}
	testenv.WaitFor(t, 30*time.Second, poll, "a leader", func() bool { return holder() != "" })
	leader, follower := a, b
	acquired := func(m *manager) bool { return strings.Contains(m.logText(), "Successfully acquired lease") }
	testenv.WaitFor(t, 30*time.Second, poll, "the leader to log its lease", func() bool { return acquired(a) || acquired(b) })
	if !acquired(a) {
		leader, follower = b, a
	}
	apply := func(name string) {
		applyYAML(t, ns, sandboxYAML(name, name+"-"+runID, "{policy: None}", "[{engine: redis}]"))
	}
	apply("first")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/first", "--timeout=120s")
	if strings.Contains(follower.logText(), `Starting workers	{"controller": "sandbox-placement"`) || acquired(follower) {
		t.Errorf("the follower placed while another manager led:\n%s", follower.logText())
	}
	if tookHost := func(m *manager) bool { return strings.Contains(m.logText(), "Took the Lease of a Docker host") }; tookHost(a) == tookHost(b) {
		t.Errorf("want exactly one manager driving the Docker host; a took its Lease: %v, b: %v", tookHost(a), tookHost(b))
	}

	leader.kill()
	apply("second")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/second", "--timeout=120s")
	if !acquired(follower) {
		t.Error("the second manager never took the lease")
	}
	kubectl(t, "delete", "-n", ns, "sandboxes", "--all", "--timeout=120s")
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
