package e2e

import (
	"fmt"
	"testing"
)

// TestDataNamedLoop is the agent's loop with named checkpoints, on postgres
// and redis: checkpoint a, write, checkpoint b, restore a, restore b, delete
// a (a restore of it then fails); status.checkpoints follows; the Secret and
// the containers never change.
func TestDataNamedLoop(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "named")
	startOwner(t, "roboco-agent-named-1")
	applyYAML(t, ns, "apiVersion: sandbox.roboco.io/v1alpha1\nkind: Sandbox\nmetadata: {name: named}\nspec:\n  agentID: named-1\n  services:\n  - {engine: postgres}\n  - {engine: redis}\n")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/named", "--timeout=180s")
	secret := secretData(t, ns, "named-sandbox")
	const same = "{.status.services[*].containerID} {.status.services[*].host} {.status.services[*].port} {.status.services[*].restarts}"
	before := sandboxField(t, ns, "named", same)
	write := func(n int) {
		clientRun(t, "postgres", secret["ROBOCO_TEST_DB_URL"], `psql "$URL" -X -q -v ON_ERROR_STOP=1 -c "$ARG"`,
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS n (n int); DELETE FROM n; INSERT INTO n VALUES (%d)", n))
		clientRun(t, "redis", secret["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" $ARG`, fmt.Sprintf("SET n %d", n))
	}
	read := func() string {
		return clientRun(t, "postgres", secret["ROBOCO_TEST_DB_URL"], `psql "$URL" -X -tA -c "$ARG"`, "SELECT n FROM n") + "/" +
			clientRun(t, "redis", secret["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" $ARG`, "GET n")
	}
	ask := func(id, action, checkpoint, want string) {
		t.Helper()
		requestNamed(t, ns, "named", id, action, checkpoint)
		if phase := dataDone(t, ns, "named", id); phase != want {
			t.Fatalf("%s %s of %s: %s, want %s: %s", action, id, checkpoint, phase, want, sandboxField(t, ns, "named", "{.status.data.message}"))
		}
	}
	checkpoints := func() string {
		return sandboxField(t, ns, "named", `{range .status.checkpoints[*]}{.name}:{.services}{" "}{end}`)
	}

	write(1)
	ask("c-a", "Checkpoint", "a", "Succeeded")
	write(2)
	ask("c-b", "Checkpoint", "b", "Succeeded")
	if got := checkpoints(); got != `a:["postgres","redis"] b:["postgres","redis"] ` {
		t.Errorf("status.checkpoints: %s", got)
	}
	write(3)
	ask("r-a", "Restore", "a", "Succeeded")
	if got := read(); got != "1/1" {
		t.Errorf("after restoring a: %s, want 1/1", got)
	}
	ask("r-b", "Restore", "b", "Succeeded")
	if got := read(); got != "2/2" {
		t.Errorf("after restoring b: %s, want 2/2", got)
	}
	ask("d-a", "DeleteCheckpoint", "a", "Succeeded")
	if got := checkpoints(); got != `b:["postgres","redis"] ` {
		t.Errorf("status.checkpoints after deleting a: %s", got)
	}
	ask("r-a2", "Restore", "a", "Failed")
	if got := read(); got != "2/2" {
		t.Errorf("after a failed restore: %s, want 2/2 as before", got)
	}
	if after := secretData(t, ns, "named-sandbox"); fmt.Sprint(after) != fmt.Sprint(secret) {
		t.Errorf("the Secret changed")
	}
	if after := sandboxField(t, ns, "named", same); after != before {
		t.Errorf("containers, hosts, ports or restarts changed: %q → %q", before, after)
	}
}
