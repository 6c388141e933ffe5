package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// seedConfigMap is a ConfigMap of init scripts for all three engines; each
// engine runs the keys with its own suffix.
func seedConfigMap(name, schema string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: %s}
data:
  10-schema.sql: |
%s
  20-keys.redis: |
    # a comment, then commands, one per line
    SET greeting "hello world"
    RPUSH letters a b c
  30-docs.js: |
    db.getSiblingDB('app').items.insertMany([{n: 1}, {n: 2}, {n: 3}]);
`, name, indent(schema, "    "))
}

func indent(s, pad string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pad + lines[i]
	}
	return strings.Join(lines, "\n")
}

const goodSchema = `CREATE TABLE items (id int PRIMARY KEY, name text);
INSERT INTO items VALUES (1, 'a'), (2, 'b');`

// query runs one command of engine's own client with the Sandbox's URL (from
// its Secret) on the Sandbox's network, and returns its output.
func query(t *testing.T, engine, rawURL, script string) string {
	t.Helper()
	b, _ := exec.Command("docker", "exec", "-e", "URL="+rawURL, clientContainer(t, engine), "sh", "-c", script).CombinedOutput()
	return strings.TrimSpace(string(b))
}

// sandboxWithInit is a Sandbox of engines, each seeded from configMap.
func sandboxWithInit(name, agentID, configMap string, engines ...string) string {
	y := fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  agentID: %s\n  services:\n", name, agentID)
	for _, e := range engines {
		y += fmt.Sprintf("  - {engine: %s, init: {configMapRef: {name: %s}}}\n", e, configMap)
	}
	return y
}

func sandboxField(t *testing.T, ns, name, jsonpath string) string {
	t.Helper()
	return kubectl(t, "get", "sandbox", name, "-n", ns, "-o", "jsonpath="+jsonpath)
}

// waitField polls a Sandbox's field until it satisfies ok (3 minutes at most,
// for a loaded machine), and returns its last value.
func waitField(t *testing.T, ns, name, jsonpath string, ok func(string) bool) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if got = sandboxField(t, ns, name, jsonpath); ok(got) {
			break
		}
	}
	return got
}

// seededData checks the seed's data in each engine of the Sandbox name.
func seededData(t *testing.T, ns, name string, engines ...string) {
	t.Helper()
	s := secretData(t, ns, name+"-sandbox")
	for _, e := range engines {
		switch e {
		case "postgres":
			if got := query(t, e, s["ROBOCO_TEST_DB_URL"], `psql "$URL" -X -tA -c 'SELECT count(*) FROM items'`); got != "2" {
				t.Errorf("%s: postgres items holds %q rows, want 2", name, got)
			}
		case "redis":
			if got := query(t, e, s["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" GET greeting`); got != "hello world" {
				t.Errorf("%s: redis greeting = %q, want hello world", name, got)
			}
			if got := query(t, e, s["ROBOCO_TEST_REDIS_URL"], `redis-cli --no-auth-warning -u "$URL" LLEN letters`); got != "3" {
				t.Errorf("%s: redis letters has %q items, want 3", name, got)
			}
		case "mongo":
			if got := query(t, e, s["ROBOCO_TEST_MONGO_URL"],
				`mongosh "$URL" --quiet --eval 'db.getSiblingDB("app").items.countDocuments()'`); got != "3" {
				t.Errorf("%s: mongo app.items holds %q documents, want 3", name, got)
			}
		}
	}
}

const servicesReady = `{.status.conditions[?(@.type=="ServicesReady")].reason}: {.status.conditions[?(@.type=="ServicesReady")].message}`

// TestSeedScripts: a Sandbox's services are seeded from one ConfigMap before
// they count as ready; a failing script says which key and which error, and
// the fixed ConfigMap seeds a new container. A running Sandbox keeps its data
// when the scripts change (its update strategy decides).
func TestSeedScripts(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "seeds")
	startOwner(t, "roboco-agent-seeded-1")
	startOwner(t, "roboco-agent-broken-1")
	applyYAML(t, ns, seedConfigMap("seed", goodSchema))
	applyYAML(t, ns, sandboxWithInit("seeded", "seeded-1", "seed", "postgres", "redis", "mongo"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/seeded", "--timeout=180s")
	seededData(t, ns, "seeded", "postgres", "redis", "mongo")

	t.Run("a failing script", func(t *testing.T) {
		applyYAML(t, ns, seedConfigMap("broken", goodSchema+"\nINSERT INTO nope VALUES (1);"))
		applyYAML(t, ns, sandboxWithInit("broken", "broken-1", "broken", "postgres"))
		msg := waitField(t, ns, "broken", servicesReady, func(s string) bool { return strings.HasPrefix(s, "InitFailed:") })
		if !strings.HasPrefix(msg, "InitFailed:") || !strings.Contains(msg, "10-schema.sql") || !strings.Contains(msg, `relation "nope" does not exist`) {
			t.Fatalf("ServicesReady says %q; want InitFailed naming 10-schema.sql and postgres' error", msg)
		}
		if stalled := sandboxField(t, ns, "broken", `{.status.conditions[?(@.type=="Stalled")].status}`); stalled != "True" {
			t.Errorf("Stalled=%q after a failed script, want True", stalled)
		}
		before := sandboxField(t, ns, "broken", `{.status.services[0].containerID}`)

		applyYAML(t, ns, seedConfigMap("broken", goodSchema))
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/broken", "--timeout=180s")
		seededData(t, ns, "broken", "postgres")
		if after := sandboxField(t, ns, "broken", `{.status.services[0].containerID}`); after == before {
			t.Errorf("the fixed scripts ran on the container %s they had failed on", after)
		}
	})
	t.Run("changed scripts keep a running Sandbox's data", func(t *testing.T) {
		before := sandboxField(t, ns, "seeded", `{.status.services[0].containerID}`)
		applyYAML(t, ns, seedConfigMap("seed", goodSchema+"\nINSERT INTO items VALUES (3, 'c');"))
		got := waitField(t, ns, "seeded", `{.status.conditions[?(@.type=="UpToDate")].message}`,
			func(s string) bool { return strings.Contains(s, "init scripts changed") })
		if !strings.Contains(got, "init scripts changed") {
			t.Errorf("UpToDate says %q; want it to say the init scripts changed", got)
		}
		if after := sandboxField(t, ns, "seeded", `{.status.services[0].containerID}`); after != before {
			t.Errorf("a running Sandbox's container was replaced (%s → %s) for changed scripts under OnDelete", before, after)
		}
		seededData(t, ns, "seeded", "postgres")
	})
}

// TestSeededPool: a pool's members are seeded before they count as ready; a
// Sandbox with the same scripts claims one and serves the seeded data, one
// with other scripts never does.
func TestSeededPool(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "seedpool")
	applyYAML(t, ns, seedConfigMap("seed", goodSchema))
	// Note: another script (a comment more): the class is the scripts' content.
	applyYAML(t, ns, seedConfigMap("other", "-- other\n"+goodSchema))
	applyYAML(t, ns, `apiVersion: sandbox.roboco.io/v1alpha1
kind: SandboxPool
metadata: {name: pg}
spec:
  replicas: 2
  service: {engine: postgres, init: {configMapRef: {name: seed}}}
`)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxpool/pg", "--timeout=180s")
	for _, sb := range []struct{ name, configMap string }{{"same", "seed"}, {"other", "other"}} {
		startOwner(t, "roboco-agent-"+sb.name+"-seedpool")
		applyYAML(t, ns, sandboxWithInit(sb.name, sb.name+"-seedpool", sb.configMap, "postgres"))
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/"+sb.name, "--timeout=180s")
		seededData(t, ns, sb.name, "postgres")
	}
	if got := sandboxField(t, ns, "same", `{.status.claims.postgres.containerID}`); got == "" {
		t.Errorf("the Sandbox seeded like the pool was not served from it (status.claims: %s)", sandboxField(t, ns, "same", `{.status.claims}`))
	}
	if got := sandboxField(t, ns, "other", `{.status.claims}`); got != "" {
		t.Errorf("a Sandbox seeded from another ConfigMap claimed a member: %s", got)
	}
}
