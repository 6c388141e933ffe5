package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchCheckpoints measures named checkpoints on the orchestrator's clock
// (client-go merge patch of spec.data → its watch sees status.data done), on
// a postgres (~10 MB) and redis (100,000 keys) Sandbox: SANDBOX_BENCH_CKPT
// (default 20) rounds, each engine in turn, of a checkpoint under one of four
// names (a new one, then replacing one) and a restore of it; then the four
// deleted. p50 and p99 of each, and the step alone as the manager recorded it.
func TestBenchCheckpoints(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_CKPT", 20)
	startManager(t)
	b := newPoolBench(t, "bench-ckpt", 0)
	subject := b.sandbox("subject", true)
	subject.Object["spec"].(map[string]any)["services"] = []any{map[string]any{"engine": "postgres"}, map[string]any{"engine": "redis"}}
	b.createReady(subject)
	secret := secretData(t, b.ns, "subject-sandbox")
	urls := map[string]string{"postgres": secret["ROBOCO_TEST_DB_URL"], "redis": secret["ROBOCO_TEST_REDIS_URL"]}
	for _, e := range []string{"postgres", "redis"} {
		if out := clientRun(t, e, urls[e], benchFill[e][0], ""); benchFill[e][1] != "" && out != benchFill[e][1] {
			t.Fatalf("filling %s: %s", e, out)
		}
	}
	t.Logf("load average at start: %s", loadAvg())
	d := &dataBench{b: b, name: "subject"}
	got, inside := map[string][]time.Duration{}, map[string][]time.Duration{}
	measure := func(key, id, action, engine string) {
		got[key] = append(got[key], d.request(id, action, engine))
		inside[key] = append(inside[key], d.took)
	}
	for i := range n {
		for _, e := range []string{"postgres", "redis"} {
			d.checkpoint = fmt.Sprintf("k%d", i%4)
			measure(e+" checkpoint", fmt.Sprintf("c-%s-%d", e, i), "Checkpoint", e)
			measure(e+" restore", fmt.Sprintf("r-%s-%d", e, i), "Restore", e)
		}
	}
	for i := range 4 {
		for _, e := range []string{"postgres", "redis"} {
			d.checkpoint = fmt.Sprintf("k%d", i)
			got[e+" delete"] = append(got[e+" delete"], d.request(fmt.Sprintf("d-%s-%d", e, i), "DeleteCheckpoint", e))
		}
	}
	t.Logf("spec.data patch → watch sees status.data done, %d of each (4 deletions), load average at end: %s", n, loadAvg())
	for _, k := range []string{"postgres checkpoint", "postgres restore", "postgres delete", "redis checkpoint", "redis restore", "redis delete"} {
		line := fmt.Sprintf("  %-20s %s", k+":", stats(got[k]))
		if len(inside[k]) > 0 {
			line += fmt.Sprintf("; the step alone p50 %s", testenv.Median(inside[k]))
		}
		t.Log(line)
	}
}
