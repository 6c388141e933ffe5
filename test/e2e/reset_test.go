package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// requestData writes spec.data with kubectl, as an orchestrator's one patch
// (services: every one when none is given).
func requestData(t *testing.T, ns, name, id, action string, services ...string) {
	t.Helper()
	requestNamed(t, ns, name, id, action, "", services...)
}

// requestNamed is requestData for the checkpoint of a name ("": latest).
func requestNamed(t *testing.T, ns, name, id, action, checkpoint string, services ...string) {
	t.Helper()
	// Note: a merge patch keeps the fields it leaves out: services and name
	// are null, not absent, to mean all and latest.
	svc := `,"services":null,"name":null`
	if len(services) > 0 {
		svc = `,"services":["` + strings.Join(services, `","`) + `"],"name":null`
	}
	if checkpoint != "" {
		svc = strings.Replace(svc, `"name":null`, fmt.Sprintf(`"name":%q`, checkpoint), 1)
	}
	kubectl(t, "patch", "sandbox", name, "-n", ns, "--type", "merge", "-p",
		fmt.Sprintf(`{"spec":{"data":{"id":%q,"action":%q%s}}}`, id, action, svc))
}

// dataDone waits until status.data reports request id finished and returns its phase.
func dataDone(t *testing.T, ns, name, id string) string {
	t.Helper()
	got := waitField(t, ns, name, "{.status.data.id}/{.status.data.phase}", func(s string) bool {
		return s == id+"/Succeeded" || s == id+"/Failed"
	})
	phase, _ := strings.CutPrefix(got, id+"/")
	return phase
}

func serviceField(t *testing.T, ns, name, engine, path string) string {
	t.Helper()
	return sandboxField(t, ns, name, fmt.Sprintf(`{.status.services[?(@.engine==%q)]%s}`, engine, path))
}

// clientRun is one command of engine's client, with ARG in its environment.
func clientRun(t *testing.T, engine, rawURL, script, arg string) string {
	t.Helper()
	b, _ := exec.Command("docker", "exec", "-e", "URL="+rawURL, "-e", "ARG="+arg, clientContainer(t, engine), "sh", "-c", script).CombinedOutput()
	return strings.TrimSpace(string(b))
}

// TestDataLoop is the agent's loop on a seeded trio: write, checkpoint, write
// more, restore, reset; the data is the checkpoint's, then the seed's; the
// Secret, the containers, their hosts and restarts never change; mongo says
// it cannot checkpoint while postgres and redis do.
func TestDataLoop(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "data")
	startOwner(t, "roboco-agent-loop-1")
	applyYAML(t, ns, seedConfigMap("seed", goodSchema))
	applyYAML(t, ns, sandboxWithInit("loop", "loop-1", "seed", "postgres", "redis", "mongo"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/loop", "--timeout=180s")
	secret := secretData(t, ns, "loop-sandbox")
	const same = "{.status.services[*].containerID} {.status.services[*].host} {.status.services[*].port} {.status.services[*].restarts}"
	before := sandboxField(t, ns, "loop", same)
	pg := func(sql string) string {
		return clientRun(t, "postgres", secret["ROBOCO_TEST_DB_URL"], `psql "$URL" -X -tA -v ON_ERROR_STOP=1 -c "$ARG"`, sql)
	}
	rd := func(cmd string) string {
		return clientRun(t, "redis", secret["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" $ARG`, cmd)
	}
	mg := func(js string) string {
		return clientRun(t, "mongo", secret["ROBOCO_TEST_MONGO_URL"], `mongosh "$URL" --quiet --eval "$ARG"`, js)
	}
	items := func() string { return pg("SELECT string_agg(id::text, ',' ORDER BY id) FROM items") }

	pg("INSERT INTO items VALUES (3, 'migrated')")
	rd("SET stage migrated")
	mg(`db.getSiblingDB("app").items.insertOne({n: 4})`)

	requestData(t, ns, "loop", "c1", "Checkpoint")
	if phase := dataDone(t, ns, "loop", "c1"); phase != "Failed" {
		t.Errorf("a trio's checkpoint is %s; want Failed, for mongo alone", phase)
	}
	for _, e := range []string{"postgres", "redis"} {
		if got := serviceField(t, ns, "loop", e, ".data.lastCheckpoint.id"); got != "c1" {
			t.Errorf("%s: lastCheckpoint %q, want c1 (error: %s)", e, got, serviceField(t, ns, "loop", e, ".data.error"))
		}
	}
	if msg := serviceField(t, ns, "loop", "mongo", ".data.error"); !strings.Contains(msg, "mongo cannot checkpoint") {
		t.Errorf("mongo's error says %q; want it to say it cannot checkpoint", msg)
	}

	pg("INSERT INTO items VALUES (4, 'tested')")
	rd("SET stage tested")
	requestData(t, ns, "loop", "r1", "Restore", "postgres", "redis")
	if phase := dataDone(t, ns, "loop", "r1"); phase != "Succeeded" {
		t.Fatalf("restore: %s: %s", phase, sandboxField(t, ns, "loop", "{.status.data.message}"))
	}
	if got := items(); got != "1,2,3" {
		t.Errorf("after restore, postgres items are %q; want the checkpoint's 1,2,3", got)
	}
	if got := rd("GET stage"); got != "migrated" {
		t.Errorf("after restore, redis stage = %q; want the checkpoint's migrated", got)
	}

	requestData(t, ns, "loop", "z1", "Reset")
	if phase := dataDone(t, ns, "loop", "z1"); phase != "Succeeded" {
		t.Fatalf("reset: %s: %s", phase, sandboxField(t, ns, "loop", "{.status.data.message}"))
	}
	if got := items(); got != "1,2" {
		t.Errorf("after reset, postgres items are %q; want the seed's 1,2", got)
	}
	if got := rd("GET stage") + "|" + rd("GET greeting"); got != "|hello world" {
		t.Errorf("after reset, redis stage|greeting = %q; want the seed's |hello world", got)
	}
	if got := mg(`db.getSiblingDB("app").items.countDocuments()`); got != "3" {
		t.Errorf("after reset, mongo app.items holds %q documents; want the seed's 3", got)
	}

	if after := secretData(t, ns, "loop-sandbox"); fmt.Sprint(after) != fmt.Sprint(secret) {
		t.Errorf("the Secret changed")
	}
	if after := sandboxField(t, ns, "loop", same); after != before {
		t.Errorf("containers, hosts, ports or restarts changed: %q → %q", before, after)
	}
}

// TestDataCheckpointTooBig: a checkpoint that would not fit the container's
// memory limit fails naming the size and the limit; the container is not
// OOM-killed and serves on.
func TestDataCheckpointTooBig(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "data-big")
	startOwner(t, "roboco-agent-big-1")
	applyYAML(t, ns, `apiVersion: sandbox.roboco.io/v1alpha1
kind: Sandbox
metadata: {name: big}
spec:
  agentID: big-1
  services:
  - {engine: redis, resources: {memory: 96Mi}}
`)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/big", "--timeout=180s")
	secret := secretData(t, ns, "big-sandbox")
	id := sandboxField(t, ns, "big", "{.status.services[0].containerID}")
	fill := `EVAL "for i = 1, 300000 do redis.call('SET', 'k' .. i, string.rep('x', 100)) end return 1" 0`
	if got := clientRun(t, "redis", secret["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" `+fill, ""); got != "1" {
		t.Fatalf("filling redis: %s", got)
	}
	requestData(t, ns, "big", "c1", "Checkpoint")
	if phase := dataDone(t, ns, "big", "c1"); phase != "Failed" {
		t.Fatalf("a checkpoint too big for the limit is %s; want Failed", phase)
	}
	msg := sandboxField(t, ns, "big", "{.status.data.message}")
	for _, want := range []string{"a checkpoint (latest) needs", "MiB of memory", "of its 96 MiB limit", "resources.memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure says %q; want it to say %q", msg, want)
		}
	}
	if got := strings.TrimSpace(docker(t, "inspect", "-f", "{{.Id}} {{.State.Running}} {{.State.OOMKilled}}", id)); got != id+" true false" {
		t.Errorf("the container after the refused checkpoint: %s", got)
	}
	if got := clientRun(t, "redis", secret["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" DBSIZE`, ""); got != "300000" {
		t.Errorf("redis holds %s keys after the refused checkpoint; want 300000", got)
	}
}

// TestDataPoolReset: a Sandbox served by seeded pools resets to the pools'
// seeded state (the snapshot each member took when its pool seeded it), with
// its claimed members kept.
func TestDataPoolReset(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "data-pool")
	applyYAML(t, ns, seedConfigMap("seed", goodSchema))
	for _, e := range []string{"postgres", "redis"} {
		applyYAML(t, ns, fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: SandboxPool\nmetadata: {name: %s}\nspec:\n  replicas: 1\n  service: {engine: %s, init: {configMapRef: {name: seed}}}\n", e, e))
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxpool/"+e, "--timeout=180s")
	}
	startOwner(t, "roboco-agent-pooled-1")
	applyYAML(t, ns, sandboxWithInit("pooled", "pooled-1", "seed", "postgres", "redis"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/pooled", "--timeout=180s")
	claims := sandboxField(t, ns, "pooled", `{.status.claims.postgres.containerID} {.status.claims.redis.containerID}`)
	if strings.Contains(" "+claims+" ", "  ") {
		t.Fatalf("the Sandbox was not served by both pools: status.claims %s", sandboxField(t, ns, "pooled", `{.status.claims}`))
	}
	s := secretData(t, ns, "pooled-sandbox")
	clientRun(t, "postgres", s["ROBOCO_TEST_DB_URL"], `psql "$URL" -X -q -c "INSERT INTO items VALUES (3, 'c')"`, "")
	clientRun(t, "redis", s["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" SET greeting changed`, "")
	requestData(t, ns, "pooled", "z1", "Reset")
	if phase := dataDone(t, ns, "pooled", "z1"); phase != "Succeeded" {
		t.Fatalf("reset: %s: %s", phase, sandboxField(t, ns, "pooled", "{.status.data.message}"))
	}
	seededData(t, ns, "pooled", "postgres", "redis")
	if got := sandboxField(t, ns, "pooled", `{.status.claims.postgres.containerID} {.status.claims.redis.containerID}`); got != claims {
		t.Errorf("the claimed members changed: %s → %s", claims, got)
	}
}
