package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// benchFill is the data each engine holds before its first checkpoint:
// postgres ~10 MB in one table, redis 100,000 keys, mongo 1,000 documents.
var benchFill = map[string][2]string{
	"postgres": {`psql "$URL" -X -q -v ON_ERROR_STOP=1 -c "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, repeat('x', 100) FROM generate_series(1, 70000) g" -c "SELECT pg_size_pretty(pg_total_relation_size('t'))" -tA`, ""},
	"redis":    {`redis-cli --no-auth-warning -u "$URL" EVAL "for i = 1, 100000 do redis.call('SET', 'key:' .. i, 'value:' .. i) end return redis.call('DBSIZE')" 0`, "100000"},
	"mongo":    {`mongosh "$URL" --quiet --eval 'db.getSiblingDB("app").items.insertMany(Array.from({length: 1000}, (_, i) => ({n: i, v: "x".repeat(100)}))); print(db.getSiblingDB("app").items.countDocuments())'`, "1000"},
}

// TestBenchData measures reset and restore on the orchestrator's clock
// (client-go merge patch of spec.data → its watch sees status.data done),
// SANDBOX_BENCH_DATA (default 20) of each per engine, interleaved: postgres
// with ~10 MB, redis with 100,000 keys, mongo (reset only) with 1,000
// documents; beside a new postgres+redis Sandbox, cold and from a pool, in
// the same run.
func TestBenchData(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_DATA", 20)
	metrics := startManagerWithMetrics(t)
	b := newPoolBench(t, "bench-data", 2, "postgres", "redis")
	t.Logf("load average at start: %s", loadAvg())
	b.waitFull(5 * time.Minute)
	subject := b.sandbox("subject", true)
	subject.Object["spec"].(map[string]any)["services"] = []any{map[string]any{"engine": "postgres"},
		map[string]any{"engine": "redis"}, map[string]any{"engine": "mongo"}}
	b.createReady(subject)
	secret := secretData(t, b.ns, "subject-sandbox")
	urls := map[string]string{"postgres": secret["ROBOCO_TEST_DB_URL"], "redis": secret["ROBOCO_TEST_REDIS_URL"], "mongo": secret["ROBOCO_TEST_MONGO_URL"]}
	for _, e := range []string{"postgres", "redis", "mongo"} {
		out := clientRun(t, e, urls[e], benchFill[e][0], "")
		if benchFill[e][1] != "" && out != benchFill[e][1] {
			t.Fatalf("filling %s: %s", e, out)
		}
		t.Logf("%s filled: %s", e, out)
	}
	d := &dataBench{b: b, name: "subject"}
	for _, e := range []string{"postgres", "redis"} {
		d.request(fmt.Sprintf("c-%s", e), "Checkpoint", e)
	}
	got := map[string][]time.Duration{}
	var cold, pooled []time.Duration
	passes := watchPasses(t, metrics)
	for i := range n {
		b.waitFull(3 * time.Minute) // Note: a pool's refill (initdb) is not measured beside the operations
		for _, e := range []string{"postgres", "redis"} {
			got[e+" restore"] = append(got[e+" restore"], d.request(fmt.Sprintf("r-%s-%d", e, i), "Restore", e))
			got[e+" reset"] = append(got[e+" reset"], d.request(fmt.Sprintf("z-%s-%d", e, i), "Reset", e))
		}
		if i%2 == 0 {
			clientRun(t, "mongo", urls["mongo"], benchFill["mongo"][0], "")
			got["mongo reset"] = append(got["mongo reset"], d.request(fmt.Sprintf("z-mongo-%d", i), "Reset", "mongo"))
		}
		if i < 10 {
			pooled = append(pooled, b.createReady(b.sandbox(fmt.Sprintf("pooled-%d", i), false)))
			b.claimed++
			name := fmt.Sprintf("cold-%d", i)
			cold = append(cold, b.createReady(b.sandbox(name, true)))
			b.deleteGone(name)
		}
	}
	t.Logf("spec.data patch → watch sees status.data done, %d of each, load average at end: %s", n, loadAvg())
	for _, k := range []string{"postgres restore", "postgres reset", "redis restore", "redis reset", "mongo reset"} {
		t.Logf("  %-17s %s", k+":", stats(got[k]))
	}
	t.Logf("  in the container (status durationMilliseconds, the last of each): %s", d.inside())
	t.Logf("  beside them, a new postgres+redis Sandbox, create → watch sees Ready: from a pool %s; cold %s", stats(pooled), stats(cold))
	passes.log("the operations and new Sandboxes")
}

type dataBench struct {
	b    *poolBench
	name string
	// took is the last request's time in the manager's words (its record's
	// durationMilliseconds): the step, without the API and the pass around it.
	took time.Duration
	// checkpoint names the checkpoint the next requests ask for ("": latest).
	checkpoint string
}

// request patches spec.data and returns how long until the watch saw
// status.data report it done; a failure ends the benchmark.
func (d *dataBench) request(id, action, engine string) time.Duration {
	t := d.b.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := d.b.dyn.Resource(sandboxes).Namespace(d.b.ns)
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + d.name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	name := "null"
	if d.checkpoint != "" {
		name = fmt.Sprintf("%q", d.checkpoint)
	}
	patch := fmt.Sprintf(`{"spec":{"data":{"id":%q,"action":%q,"services":[%q],"name":%s}}}`, id, action, engine, name)
	start := time.Now()
	if _, err := res.Patch(ctx, d.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watching %s: %v", d.name, ev.Object)
		}
		obj := ev.Object.(*unstructured.Unstructured)
		gotID, _, _ := unstructured.NestedString(obj.Object, "status", "data", "id")
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "data", "phase")
		switch {
		case gotID != id || phase == "Running" || phase == "":
			continue
		case phase != "Succeeded":
			msg, _, _ := unstructured.NestedString(obj.Object, "status", "data", "message")
			t.Fatalf("%s %s of %s: %s: %s", action, id, engine, phase, msg)
		}
		elapsed := time.Since(start)
		d.took = recordedTook(obj, engine, action)
		return elapsed
	}
	t.Fatalf("the watch of %s ended before %s was done", d.name, id)
	return 0
}

// inside is each engine's last reset and restore as the manager timed its exec.
func (d *dataBench) inside() string {
	t := d.b.t
	out := ""
	for _, e := range []string{"postgres", "redis", "mongo"} {
		for _, op := range []string{"lastRestore", "lastReset"} {
			v := sandboxField(t, d.b.ns, d.name, fmt.Sprintf(`{.status.services[?(@.engine==%q)].data.%s.durationMilliseconds}`, e, op))
			if v != "" {
				out += fmt.Sprintf("%s %s %sms; ", e, op, v)
			}
		}
	}
	return out
}

// recordedTook is the durationMilliseconds of engine's last action in obj's
// status (0 when it has none).
func recordedTook(obj *unstructured.Unstructured, engine, action string) time.Duration {
	services, _, _ := unstructured.NestedSlice(obj.Object, "status", "services")
	for _, s := range services {
		m, ok := s.(map[string]any)
		if !ok || m["engine"] != engine {
			continue
		}
		ms, _, _ := unstructured.NestedInt64(m, "data", "last"+action, "durationMilliseconds")
		return time.Duration(ms) * time.Millisecond
	}
	return 0
}
