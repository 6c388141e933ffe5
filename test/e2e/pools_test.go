package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// Each engine's container-name slug and the Secret variable of its password, as
// docs/api.md documents them.
var (
	slugs        = map[string]string{"postgres": "pg", "redis": "redis"}
	passwordKeys = map[string]string{"postgres": "ROBOCO_TEST_DB_PASSWORD", "redis": "ROBOCO_TEST_REDIS_PASSWORD"}
)

// TestPoolKubectlUser: apply the pool sample, wait for the pools, then a Sandbox
// of their classes is served by their members: renamed, its Secret made with
// the member's own password (no other member's), and the pools refill.
func TestPoolKubectlUser(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "pools")
	cleanNamespace(t, ns)
	start := time.Now()
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(testenv.Root(), "config", "samples", "sandbox_v1alpha1_pool.yaml"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxpool/pg", "sandboxpool/redis", "--timeout=300s")
	t.Logf("kubectl apply → kubectl wait Ready, the sample's pools: %s", time.Since(start).Round(time.Millisecond))
	// The sample's pools, by engine.
	names := map[string]string{"postgres": "pg", "redis": "redis"}
	pools := map[string]string{}
	for engine, name := range names {
		pools[engine] = poolUID(t, ns, name)
	}
	earlier := map[string]string{} // member ID → its password before any claim
	for engine, uid := range pools {
		for id, pw := range memberPasswords(t, engine, uid) {
			earlier[id] = pw
		}
	}

	agentID := "warm-" + runID
	start = time.Now()
	applyYAML(t, ns, sandboxYAML("warm", agentID, "{policy: None}", "[{engine: postgres}, {engine: redis}]"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/warm", "--timeout=180s")
	t.Logf("kubectl apply → kubectl wait Ready, Sandbox of pool members: %s", time.Since(start).Round(time.Millisecond))

	vars := secretData(t, ns, "warm-sandbox")
	sb := getSandbox(t, ns, "warm")
	if len(sb.Status.Services) != 2 {
		t.Fatalf("status.services: %+v, want postgres and redis", sb.Status.Services)
	}
	for _, s := range sb.Status.Services {
		memberServes(t, s, pools[s.Engine], "roboco-sandbox-"+slugs[s.Engine]+"-"+agentID, earlier, vars)
	}
	connectAll(t, ns, "warm")
	for engine, uid := range pools {
		waitRefilled(t, ns, names[engine], uid, 2, 1)
	}
	t.Logf("kubectl apply → both pools refilled: %s", time.Since(start).Round(time.Millisecond))

	kubectl(t, "delete", "-n", ns, "sandbox/warm", "--timeout=120s")
	kubectl(t, "delete", "-n", ns, "sandboxpool/pg", "sandboxpool/redis", "--timeout=120s")
	for _, uid := range pools {
		noPoolContainers(t, uid)
	}
}

// memberServes checks that a Sandbox's service s is served by a member of the
// pool poolUID, named name, whose own password the Sandbox's Secret (vars)
// holds.
func memberServes(t *testing.T, s serviceStatus, poolUID, name string, earlier, vars map[string]string) {
	t.Helper()
	label := docker(t, "inspect", "-f", `{{index .Config.Labels "`+poolUIDLabel+`"}}`, s.ContainerID)
	if strings.TrimSpace(label) != poolUID {
		t.Errorf("%s is served by %s, pool UID label %q: not a member of its pool", s.Engine, s.ContainerID, label)
	}
	if got := strings.TrimPrefix(strings.TrimSpace(docker(t, "inspect", "-f", "{{.Name}}", s.ContainerID)), "/"); got != name || s.ContainerName != name {
		t.Errorf("%s: container named %s (status %s), want %s", s.Engine, got, s.ContainerName, name)
	}
	if _, ok := earlier[s.ContainerID]; !ok {
		t.Errorf("%s: container %s was not a member before the claim", s.Engine, s.ContainerID)
		return
	}
	servesOwnPassword(t, s.Engine, s.ContainerID, vars, passwordKeys[s.Engine], earlier)
	if got := containerPassword(t, s.Engine, s.ContainerID); got != vars[passwordKeys[s.Engine]] {
		t.Errorf("%s: the member's password file does not hold the Sandbox's password", s.Engine)
	}
}

// waitRefilled waits until the pool holds replicas ready unclaimed members, by its
// status and on the Docker host (running, not named as a service), and claimed
// claimed ones.
func waitRefilled(t *testing.T, ns, pool, uid string, replicas, claimed int) {
	t.Helper()
	want := fmt.Sprintf("%d %d %d, %d unclaimed running", replicas, replicas, claimed, replicas)
	var got string
	var seen []dockerContainer
	defer func() {
		if t.Failed() {
			t.Logf("pool %s: ready, replicas, claimed %s; want %s; its containers: %+v", pool, got, want, seen)
		}
	}()
	testenv.WaitFor(t, 3*time.Minute, poll, "pool "+pool+" to refill", func() bool {
		seen = poolContainers(t, uid)
		unclaimed := 0
		for _, c := range seen {
			if !strings.HasPrefix(c.name, "roboco-sandbox-") && c.state == "running" {
				unclaimed++
			}
		}
		var p struct {
			Status struct {
				ReadyReplicas, Replicas, Claimed int
				Conditions                       []struct{ Type, Message string }
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(kubectl(t, "get", "sandboxpool", pool, "-n", ns, "-o", "json")), &p); err != nil {
			t.Fatal(err)
		}
		got = fmt.Sprintf("%d %d %d, %d unclaimed running", p.Status.ReadyReplicas, p.Status.Replicas, p.Status.Claimed, unclaimed)
		if got != want {
			got += fmt.Sprintf(" (%+v)", p.Status.Conditions)
		}
		return got == want
	})
}

// noPoolContainers fails unless no container carries the pool's UID (the sweep
// may take its interval and grace period to remove what teardown missed).
func noPoolContainers(t *testing.T, uid string) {
	t.Helper()
	var left []dockerContainer
	defer func() {
		if t.Failed() {
			t.Logf("left: %+v", left)
		}
	}()
	testenv.WaitFor(t, 30*time.Second, poll, "the pool's containers to be gone", func() bool {
		left = poolContainers(t, uid)
		return len(left) == 0
	})
}

// cleanNamespace deletes, when the test ends, the namespace and whatever
// containers of it a failure left behind.
func cleanNamespace(t *testing.T, ns string) {
	t.Cleanup(func() {
		_, _ = env.Kubectl("delete", "namespace", ns, "--wait=false")
		_ = exec.Command("sh", "-c", "docker ps -aq --filter label=sandbox.roboco.io/namespace="+ns+" | xargs -r docker rm -fv").Run()
	})
}

// TestPoolClaimSurvivesSIGKILL: a manager killed right after each step of a claim
// (a chaos_plant build's crash points), then a normal one: the Sandbox is served
// by one container with its Secret's password, no container serves two
// Sandboxes, the pool is whole again, and nothing outlives the pool. A renamed
// member is recovered on the Sandbox's record, or, that cleared, on its
// Secret; with neither (renamed before the Secret, the status cleared) it is
// reaped and the Sandbox served by another.
func TestPoolClaimSurvivesSIGKILL(t *testing.T) {
	bin := plantedManager(t)
	for i, tc := range []struct {
		point       string
		clearStatus bool
	}{
		{chaosplant.AfterClaimRecorded, false},
		{chaosplant.AfterClaimSecret, false},
		{chaosplant.AfterClaimRenamed, false},
		{chaosplant.AfterClaimRenamed, true},
		{chaosplant.AfterClaimRenamedNoSecret, false},
		{chaosplant.AfterClaimRenamedNoSecret, true},
	} {
		name := tc.point
		if tc.clearStatus {
			name += "/status-cleared"
		}
		t.Run(name, func(t *testing.T) { crashDuringClaim(t, bin, fmt.Sprintf("k%d", i), tc.point, tc.clearStatus) })
	}
}

func crashDuringClaim(t *testing.T, bin, id, point string, clearStatus bool) {
	ns := newNamespace(t, "claimkill-"+id)
	cleanNamespace(t, ns)
	planted := startBinary(t, bin, []string{chaosplant.CrashEnv + "=" + point})
	applyYAML(t, ns, poolYAML("redis", "redis", 2))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxpool/redis", "--timeout=300s")
	uid := poolUID(t, ns, "redis")
	applyYAML(t, ns, sandboxYAML("first", id+"a-"+runID, "{policy: None}", "[{engine: redis}]"))
	if !planted.ended(3 * time.Minute) {
		t.Fatalf("the manager still runs: the crash point %s was not reached", point)
	}
	if ws, ok := planted.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the manager ended with %s, not by the SIGKILL of its crash point", planted.cmd.ProcessState)
	}
	t.Logf("after the crash %s, the pool's containers: %+v", point, poolContainers(t, uid))
	record := getSandbox(t, ns, "first").Status.Claims["redis"].ContainerID
	if record == "" {
		t.Fatalf("no claim record on the Sandbox after a crash %s", point)
	}
	if clearStatus {
		clearSandboxStatus(t, ns, "first")
	}
	startManager(t)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/first", "--timeout=180s")
	first := servedOnce(t, ns, "first", uid)
	switch {
	case point == chaosplant.AfterClaimRenamedNoSecret && clearStatus:
		// A double fault: renamed, no Secret, no record. No agent ever had the
		// member's credentials: it is reaped as a leftover, never recovered.
		if first == record {
			t.Errorf("first is served by %s, which nothing proved its own", record)
		}
		if recovered := kubectl(t, "get", "events", "-n", ns, "--field-selector", "reason=ClaimRecovered",
			"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}"); recovered != "" {
			t.Errorf("a claim was recovered with no proof: %s", recovered)
		}
		testenv.WaitFor(t, time.Minute, poll, "the leftover member to be reaped", func() bool {
			return len(listContainers(t, "id="+record)) == 0
		})
	case (point == chaosplant.AfterClaimRenamed || point == chaosplant.AfterClaimRenamedNoSecret) && first != record:
		t.Errorf("first is served by %s, not by the member it claimed and renamed, %s", first, record)
	}
	waitRefilled(t, ns, "redis", uid, 2, claimedOf(t, map[string]string{servedOnce(t, ns, "first", uid): "first"}, uid))
	// A second Sandbox claims from what the pool offers after the crash.
	applyYAML(t, ns, sandboxYAML("second", id+"b-"+runID, "{policy: None}", "[{engine: redis}]"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/second", "--timeout=180s")

	served := map[string]string{} // container ID → the Sandbox it serves
	for _, name := range []string{"first", "second"} {
		id := servedOnce(t, ns, name, uid)
		if other, ok := served[id]; ok {
			t.Errorf("container %s serves both %s and %s", id, other, name)
		}
		served[id] = name
		vars := secretData(t, ns, name+"-sandbox")
		if out, in, _ := login(t, "redis", vars, vars[passwordKeys["redis"]]); !in {
			t.Errorf("%s: redis refused its Secret's password: %s", name, out)
		}
	}
	if a, b := secretData(t, ns, "first-sandbox"), secretData(t, ns, "second-sandbox"); a[passwordKeys["redis"]] == b[passwordKeys["redis"]] {
		t.Errorf("first and second hold the same redis password: a member's password reached two Secrets")
	}
	claimed := claimedOf(t, served, uid)
	t.Logf("after the crash %s: %d of 2 Sandboxes claimed a pool member (any other started cold)", point, claimed)
	waitRefilled(t, ns, "redis", uid, 2, claimed)
	kubectl(t, "delete", "-n", ns, "sandbox/first", "sandbox/second", "--timeout=120s")
	kubectl(t, "delete", "-n", ns, "sandboxpool/redis", "--timeout=120s")
	noPoolContainers(t, uid)
}
