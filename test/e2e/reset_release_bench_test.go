package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// releaseBeforeSteps is the release before issue 39 (the parent of 65b47d6):
// a data operation ran inside the pass, in an exec held ready in its container.
const releaseBeforeSteps = "20eecb0"

// dataOps are the operations TestBenchDataRelease times, in the order a round
// asks for them.
var dataOps = []struct{ engine, action string }{
	{"postgres", "Restore"}, {"postgres", "Reset"}, {"redis", "Restore"}, {"redis", "Reset"}, {"mongo", "Reset"},
}

// TestBenchDataRelease measures reset and restore against the release before
// issue 39 in the same run: that release (built here from a worktree of its
// commit) and today's manager, each on a control plane of its own, each with a
// trio Sandbox filled as TestBenchData's (mongo refilled before each reset).
// SANDBOX_BENCH_DATA (default 20) rounds, the sides taking turns to go first,
// each round on a settled machine, on the orchestrator's clock (spec.data
// patch → its watch sees status.data done): per operation each side's p50 and
// p99 and the ratio of today's p50 to the release's.
func TestBenchDataRelease(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_DATA", 20)
	prevBin, prevCRDs := buildRelease(t, releaseBeforeSteps)
	prevPlane, err := testenv.StartWith(prevCRDs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prevPlane.Stop() })
	prevInstance := instance + "-prev"
	t.Cleanup(func() { removeInstance(prevInstance) })
	startBinary(t, prevBin, nil, "--kubeconfig", prevPlane.Kubeconfig(), "--instance", prevInstance)
	startManager(t)
	sides := []*dataSide{
		newDataSide(t, "before ("+releaseBeforeSteps+")", prevPlane, "before"),
		newDataSide(t, "after", env, "after"),
	}
	t.Logf("load average at start: %s", loadAvg())
	for i := range n {
		for k := range sides {
			settle(t, 20*time.Second)
			sides[(i+k)%len(sides)].round(t, i)
		}
	}
	t.Logf("spec.data patch → watch sees status.data done, %d rounds, load average at end: %s", n, loadAvg())
	for _, op := range dataOps {
		key := op.engine + " " + op.action
		before, after := sides[0].got[key], sides[1].got[key]
		t.Logf("  %-17s %s %s; %s %s; p50 ratio %.2f", key+":", sides[0].label, stats(before), sides[1].label, stats(after),
			float64(testenv.Median(after))/float64(testenv.Median(before)))
		t.Logf("  %-17s as each manager recorded it (the step alone): %s p50 %s; %s p50 %s", "", sides[0].label,
			testenv.Median(sides[0].took[key]), sides[1].label, testenv.Median(sides[1].took[key]))
	}
}

// dataSide is one manager's trio Sandbox and what its operations took.
type dataSide struct {
	label string
	d     *dataBench
	mongo string // the mongo URL, for the refill before each reset
	got   map[string][]time.Duration
	took  map[string][]time.Duration // as the manager recorded them (the step)
}

// newDataSide makes namespace bench-data-name-runID on e and a cold trio
// Sandbox name there (names apart: both sides' containers share the daemon),
// fills it and checkpoints postgres and redis.
func newDataSide(t *testing.T, label string, e *testenv.Env, name string) *dataSide {
	t.Helper()
	ns := "bench-data-" + name + "-" + runID
	e.MustKubectl(t, "create", "namespace", ns)
	b := poolBenchIn(t, e, ns, 0)
	subject := b.sandbox(name, true)
	subject.Object["spec"].(map[string]any)["services"] = []any{map[string]any{"engine": "postgres"},
		map[string]any{"engine": "redis"}, map[string]any{"engine": "mongo"}}
	b.createReady(subject)
	var secret struct {
		Data map[string][]byte `json:"data"`
	}
	if err := json.Unmarshal([]byte(e.MustKubectl(t, "get", "secret", name+"-sandbox", "-n", ns, "-o", "json")), &secret); err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{"postgres": string(secret.Data["ROBOCO_TEST_DB_URL"]),
		"redis": string(secret.Data["ROBOCO_TEST_REDIS_URL"]), "mongo": string(secret.Data["ROBOCO_TEST_MONGO_URL"])}
	for _, engine := range []string{"postgres", "redis", "mongo"} {
		out := clientRun(t, engine, urls[engine], benchFill[engine][0], "")
		if benchFill[engine][1] != "" && out != benchFill[engine][1] {
			t.Fatalf("%s: filling %s: %s", label, engine, out)
		}
	}
	d := &dataBench{b: b, name: name}
	for _, engine := range []string{"postgres", "redis"} {
		d.request("c-"+engine, "Checkpoint", engine)
	}
	return &dataSide{label: label, d: d, mongo: urls["mongo"], got: map[string][]time.Duration{}, took: map[string][]time.Duration{}}
}

// round asks for each of dataOps once, in turn, mongo refilled before its reset.
func (s *dataSide) round(t *testing.T, i int) {
	t.Helper()
	for _, op := range dataOps {
		if op.engine == "mongo" {
			clientRun(t, "mongo", s.mongo, benchFill["mongo"][0], "")
		}
		key := op.engine + " " + op.action
		s.got[key] = append(s.got[key], s.d.request(fmt.Sprintf("%s-%s-%d", strings.ToLower(op.action), op.engine, i), op.action, op.engine))
		s.took[key] = append(s.took[key], s.d.took)
	}
}
