package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchSeedDelete measures, on the orchestrator's clock, how long a
// Sandbox deleted in the middle of a 5 × 55 s seed takes to go (delete →
// its watch sees it deleted, its containers removed), SANDBOX_BENCH_SEED_DELETES
// (default 10) rounds of create → Seeding → delete → gone. Issue 39's target:
// p50 ≤ 5 s (a seed held by the pass kept it for the script's rest, ~33 s).
func TestBenchSeedDelete(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_SEED_DELETES", 10)
	startManager(t)
	ns := newNamespace(t, "bench-seed-delete")
	t.Cleanup(func() { env.MustKubectl(t, "delete", "-n", ns, "sandboxes", "--all", "--timeout=300s") })
	scripts := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow}\ndata:\n"
	for i := 1; i <= 5; i++ {
		scripts += fmt.Sprintf("  %02d-sleep.sql: SELECT pg_sleep(55);\n", 10*i)
	}
	applyYAML(t, ns, scripts)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	res := dynamic.NewForConfigOrDie(cfg).Resource(sandboxes).Namespace(ns)
	t.Logf("load average at start: %s", loadAvg())
	var toSeeding, toGone []time.Duration
	for i := range n {
		seeding, gone, uid := seedDeleted(t, res, fmt.Sprintf("seeding-%d", i))
		toSeeding, toGone = append(toSeeding, seeding), append(toGone, gone)
		if left := dockerPS(t, "sandbox.roboco.io/uid="+uid); len(left) > 0 {
			t.Errorf("round %d: containers %v outlived their deleted Sandbox", i, left)
		}
	}
	t.Logf("a postgres Sandbox deleted mid-seed (5 × 55 s of pg_sleep), %d rounds, load average at end: %s", n, loadAvg())
	t.Logf("  create → Seeding: %s", stats(toSeeding))
	t.Logf("  delete → gone:    %s", stats(toGone))
	if p50 := testenv.Median(toGone); p50 > 5*time.Second {
		t.Errorf("delete → gone p50 %s, want ≤ 5s", ms(p50))
	}
}

// seedDeleted creates a postgres Sandbox seeded from the ConfigMap slow,
// deletes it once its status says Seeding, and answers how long it took to
// seed and how long the delete took to make it gone, and its UID.
func seedDeleted(t *testing.T, res dynamic.ResourceInterface, name string) (seeding, gone time.Duration, uid string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	sb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandbox.roboco.io/v1alpha1", "kind": "Sandbox",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"agentID": name + "-" + runID, "owner": map[string]any{"policy": "None"},
			"services": []any{map[string]any{"engine": "postgres", "init": map[string]any{"configMapRef": map[string]any{"name": "slow"}}}}},
	}}
	start := time.Now()
	if _, err := res.Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var deleted time.Time
	for ev := range w.ResultChan() {
		obj, _ := ev.Object.(*unstructured.Unstructured)
		switch {
		case ev.Type == watch.Error:
			t.Fatalf("watching %s: %v", name, ev.Object)
		case ev.Type == watch.Deleted && deleted.IsZero():
			t.Fatalf("%s was deleted before it was Seeding", name)
		case ev.Type == watch.Deleted:
			return seeding, time.Since(deleted), uid
		case deleted.IsZero() && isSeeding(obj):
			seeding, uid = time.Since(start), string(obj.GetUID())
			deleted = time.Now()
			if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatalf("the watch of %s ended (Seeding after %s, deleted: %t)", name, seeding, !deleted.IsZero())
	return 0, 0, ""
}

// isSeeding says a Sandbox's ServicesReady says Seeding.
func isSeeding(obj *unstructured.Unstructured) bool {
	reason, _ := servicesReadyOf(obj)
	return reason == "Seeding"
}
