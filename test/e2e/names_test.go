package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestOneNameOneContainer: a Sandbox in namespace B whose agentID is namespace
// A's long agentID's published alias, less its prefix, would get a container
// named exactly as A's host: Docker's DNS then answered two addresses for A's
// ROBOCO_TEST_REDIS_HOST, and B's container took a share of A's agent's
// connections. Now B stalls (NameConflict, A not named), no container of its
// name exists, and the host resolves to A's container alone.
func TestOneNameOneContainer(t *testing.T) {
	startManager(t)
	nsA, nsB := newNamespace(t, "names-a"), newNamespace(t, "names-b")
	long := "tenant-a-" + runID + strings.Repeat("x", 38-len(runID))
	applyYAML(t, nsA, sandboxYAML("long", long, "{policy: None}", "[{engine: redis}]"))
	kubectl(t, "wait", "-n", nsA, "--for=condition=Ready", "sandbox/long", "--timeout=180s")
	alias := strings.TrimSpace(kubectl(t, "get", "-n", nsA, "sandbox/long", "-o", "jsonpath={.status.services[0].host}"))
	const prefix = "roboco-sandbox-redis-"
	if len(alias) != 63 || !strings.HasPrefix(alias, prefix) {
		t.Fatalf("published host %q: want a 63-character alias", alias)
	}

	applyYAML(t, nsB, sandboxYAML("squat", strings.TrimPrefix(alias, prefix), "{policy: None}", "[{engine: redis}]"))
	kubectl(t, "wait", "-n", nsB, "--for=condition=Stalled", "sandbox/squat", "--timeout=120s")
	msg := kubectl(t, "get", "-n", nsB, "sandbox/squat", "-o", `jsonpath={.status.conditions[?(@.type=="Stalled")].reason}: {.status.conditions[?(@.type=="Stalled")].message}`)
	if !strings.HasPrefix(msg, "NameConflict: ") || strings.Contains(msg, nsA) || strings.Contains(msg, long) {
		t.Errorf("the squatter's Stalled condition: %q; want NameConflict, naming neither A's namespace nor its agentID", msg)
	}
	if out := docker(t, "ps", "-a", "-q", "--filter", "name=^/"+alias+"$"); strings.TrimSpace(out) != "" {
		t.Errorf("a container named %s exists beside the one aliased so: %s", alias, out)
	}
	want := strings.TrimSpace(docker(t, "inspect", "-f", "{{(index .NetworkSettings.Networks \""+network+"\").IPAddress}}", prefix+long))
	var got string
	testenv.WaitFor(t, 30*time.Second, poll, "the host resolving", func() bool {
		got = strings.Join(strings.Fields(docker(t, "run", "--rm", "--network", network, "--entrypoint", "sh", images.Plain["redis"],
			"-c", "getent ahostsv4 "+alias+" | awk '{print $1}' | sort -u")), " ")
		return got != ""
	})
	if got != want {
		t.Errorf("%s resolves to %q on the network, want A's container alone (%s)", alias, got, want)
	}
	kubectl(t, "delete", "-n", nsA, "sandbox/long", "--timeout=60s")
	kubectl(t, "wait", "-n", nsB, "--for=condition=Ready", "sandbox/squat", "--timeout=180s")
	kubectl(t, "delete", "-n", nsB, "sandbox/squat", "--timeout=60s")
}
