package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// benchSeed makes 1,000 rows: enough that the script's own time shows.
const benchSeed = `CREATE TABLE items (id int PRIMARY KEY, name text);
INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 1000) g;`

// TestBenchSeeds measures what seeding costs on the orchestrator's clock
// (client-go create → its watch sees Ready), postgres, SANDBOX_BENCH_SEEDS
// (default 10) interleaved runs of each: a claim from a seeded pool against a
// claim from a plain one, and a cold seeded Sandbox against a cold plain one,
// beside the script's own time (psql running it, from a client container).
func TestBenchSeeds(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_SEEDS", 10)
	startManager(t)
	b := newPoolBench(t, "bench-seeds", 3, "postgres")
	applyYAML(t, b.ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seed}\ndata:\n  10-items.sql: |\n"+indent(benchSeed, "    ")+"\n")
	seededPool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandbox.roboco.io/v1alpha1", "kind": "SandboxPool",
		"metadata": map[string]any{"name": "seeded", "namespace": b.ns},
		"spec": map[string]any{"replicas": int64(3), "service": map[string]any{"engine": "postgres",
			"init": map[string]any{"configMapRef": map[string]any{"name": "seed"}}}},
	}}
	if _, err := b.dyn.Resource(sandboxPools).Namespace(b.ns).Create(context.Background(), seededPool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seeded := &poolBench{t: t, ns: b.ns, dyn: b.dyn, engines: []string{"seeded"}, replicas: 3}
	t.Logf("load average at start: %s", loadAvg())
	sandbox := func(name string, init, cold bool) *unstructured.Unstructured {
		sb := b.sandbox(name, cold)
		if init {
			svc := sb.Object["spec"].(map[string]any)["services"].([]any)[0].(map[string]any)
			svc["init"] = map[string]any{"configMapRef": map[string]any{"name": "seed"}}
		}
		return sb
	}
	var plainClaim, seededClaim, plainCold, seededCold, script []time.Duration
	runs := []func(i int){
		func(i int) {
			plainClaim = append(plainClaim, b.createReady(sandbox(fmt.Sprintf("pc-%d", i), false, false)))
			b.claimed++
		},
		func(i int) {
			seededClaim = append(seededClaim, b.createReady(sandbox(fmt.Sprintf("sc-%d", i), true, false)))
			seeded.claimed++
		},
		func(i int) {
			name := fmt.Sprintf("pcold-%d", i)
			plainCold = append(plainCold, b.createReady(sandbox(name, false, true)))
			script = append(script, scriptTime(t, b.ns, name))
			b.deleteGone(name)
		},
		func(i int) {
			name := fmt.Sprintf("scold-%d", i)
			seededCold = append(seededCold, b.createReady(sandbox(name, true, true)))
			b.deleteGone(name)
		},
	}
	for i := range n {
		for k := range runs {
			b.waitFull(3 * time.Minute)
			seeded.waitFull(3 * time.Minute)
			runs[(i+k)%len(runs)](i)
		}
	}
	med := testenv.Median
	t.Logf("postgres, %d runs of each kind interleaved, load average at end: %s", n, loadAvg())
	t.Logf("  claim from a plain pool:  %s", stats(plainClaim))
	t.Logf("  claim from a seeded pool: %s", stats(seededClaim))
	t.Logf("  seeded / plain claim, p50: ×%.2f (target ≤ ×1.10)", med(seededClaim).Seconds()/med(plainClaim).Seconds())
	t.Logf("  cold plain:  %s", stats(plainCold))
	t.Logf("  cold seeded: %s", stats(seededCold))
	t.Logf("  the script alone (psql from a client container, connection included): %s", stats(script))
	t.Logf("  cold seeded − cold plain, p50: %s; less the script's own p50: %s (target ≤ 100ms)",
		ms(med(seededCold)-med(plainCold)), ms(med(seededCold)-med(plainCold)-med(script)))
}

// scriptTime runs benchSeed with psql, from a client container, against the
// plain Sandbox name's database (in a schema of its own, dropped after), and
// returns how long psql took.
func scriptTime(t *testing.T, ns, name string) time.Duration {
	t.Helper()
	s := secretData(t, ns, name+"-sandbox")
	sql := "CREATE SCHEMA bench; SET search_path TO bench;\n" + benchSeed + "\nDROP SCHEMA bench CASCADE;"
	start := time.Now()
	b, err := exec.Command("docker", "exec", "-e", "URL="+s["ROBOCO_TEST_DB_URL"], "-e", "SQL="+sql, clientContainer(t, "postgres"),
		"sh", "-c", `psql "$URL" -X -q -v ON_ERROR_STOP=1 -c "$SQL"`).CombinedOutput()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("the seed script alone failed: %v: %s", err, strings.TrimSpace(string(b)))
	}
	return d
}
