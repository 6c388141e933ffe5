package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// redisCLI runs redis-cli in the redis client container against the service the
// Secret's variables vars name, as the agent would, and returns its answer.
func redisCLI(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	cmd := append([]string{"exec", "-e", "REDISCLI_AUTH=" + vars["ROBOCO_TEST_REDIS_PASSWORD"], clientContainer(t, "redis"),
		"redis-cli", "--no-auth-warning", "-h", vars["ROBOCO_TEST_REDIS_HOST"], "-p", vars["ROBOCO_TEST_REDIS_PORT"]}, args...)
	b, _ := exec.Command("docker", cmd...).CombinedOutput()
	return strings.TrimSpace(string(b))
}

// TestPoolClaimSurvivesPlainReplace: an orchestrator's plain read-modify-write of
// a Sandbox served by a pool member (its annotations emptied, spec.ttl changed,
// kubectl replace) keeps the same container and the agent's data, through more
// than two sweeps (the manager sweeps every 5s here, with a 5s grace). It lost
// the database when the claim was recorded in an annotation.
func TestPoolClaimSurvivesPlainReplace(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "pools-replace")
	cleanNamespace(t, ns)
	applyYAML(t, ns, poolYAML("redis", "redis", 1))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxpool/redis", "--timeout=300s")
	uid := poolUID(t, ns, "redis")
	applyYAML(t, ns, sandboxYAML("kept", "kept-"+runID, "{policy: None}", "[{engine: redis}]"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/kept", "--timeout=180s")
	served := servedOnce(t, ns, "kept", uid)
	if label := strings.TrimSpace(docker(t, "inspect", "-f", `{{index .Config.Labels "`+poolUIDLabel+`"}}`, served)); label != uid {
		t.Fatalf("kept is served by %s, not by a member of the pool (its pool label %q)", served, label)
	}
	vars := secretData(t, ns, "kept-sandbox")
	if out := redisCLI(t, vars, "SET", "agent-state", "migrated"); out != "OK" {
		t.Fatalf("SET: %s", out)
	}

	var obj map[string]any
	if err := json.Unmarshal([]byte(kubectl(t, "get", "sandbox", "kept", "-n", ns, "-o", "json")), &obj); err != nil {
		t.Fatal(err)
	}
	obj["metadata"].(map[string]any)["annotations"] = map[string]any{}
	obj["spec"].(map[string]any)["ttl"] = "4h"
	file := filepath.Join(t.TempDir(), "kept.json")
	b, _ := json.Marshal(obj)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "replace", "-f", file)

	// Three sweep intervals: every sweep in that window judged the member.
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if now := getSandbox(t, ns, "kept").Status.Services[0].ContainerID; now != served {
			t.Fatalf("after the replace, kept is served by %s, not %s", now, served)
		}
	}
	if got := redisCLI(t, vars, "GET", "agent-state"); got != "migrated" {
		t.Fatalf("after the replace and three sweeps, GET agent-state = %q: the agent's data is gone", got)
	}
	if now := servedOnce(t, ns, "kept", uid); now != served {
		t.Fatalf("kept is served by %s, not %s", now, served)
	}
	kubectl(t, "delete", "-n", ns, "sandbox/kept", "--timeout=120s")
	kubectl(t, "delete", "-n", ns, "sandboxpool/redis", "--timeout=120s")
	noPoolContainers(t, uid)
}
