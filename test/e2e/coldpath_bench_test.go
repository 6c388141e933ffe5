package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchColdPath compares a cold postgres+redis Sandbox, on the orchestrator's
// clock (client-go create → its watch sees Ready=True), with testcontainers-go
// starting the same images in parallel with exec probes polled every 100 ms
// (hack/tcbench, its own time from its first create to both ready), in interleaved
// rounds (SANDBOX_BENCH_ROUNDS, default 10) so both share the machine's state.
func TestBenchColdPath(t *testing.T) {
	testenv.BenchOnly(t)
	rounds := 10
	if n, err := strconv.Atoi(os.Getenv("SANDBOX_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	tc := buildTCBench(t)
	startManager(t)
	ns := newNamespace(t, "bench-cold")
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)

	var ours, theirs, theirProcess []time.Duration
	for round := range rounds {
		runOurs := func() { ours = append(ours, coldSandbox(t, dyn, ns, fmt.Sprintf("cold-%d", round))) }
		runTC := func() {
			in, process := runTCBench(t, tc)
			theirs, theirProcess = append(theirs, in), append(theirProcess, process)
		}
		// Either side goes first in turn: neither always starts on a machine the
		// other has just warmed (or left busy removing its containers).
		if round%2 == 0 {
			runOurs()
			runTC()
		} else {
			runTC()
			runOurs()
		}
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	line := func(ds []time.Duration) string {
		return fmt.Sprintf("median %s, p99 (the worst of %d) %s", ms(testenv.Median(ds)), len(ds), ms(slices.Max(ds)))
	}
	t.Logf("cold postgres+redis, %d rounds interleaved:", rounds)
	t.Logf("  ours, client-go create → watch sees Ready: %s; all %v", line(ours), ours)
	t.Logf("  testcontainers-go v0.45, first create → both probes passed: %s; all %v", line(theirs), theirs)
	t.Logf("  testcontainers-go, whole process (start, Docker connection, removal): %s", line(theirProcess))
	t.Logf("  ours / testcontainers-go: median %.2f, worst %.2f",
		testenv.Median(ours).Seconds()/testenv.Median(theirs).Seconds(), slices.Max(ours).Seconds()/slices.Max(theirs).Seconds())
}

// coldSandbox creates a postgres+redis Sandbox as an orchestrator does, returns how
// long until its watch saw Ready=True, then deletes it and waits until it is gone
// (its containers removed), so the next round starts on a quiet host.
func coldSandbox(t *testing.T, dyn dynamic.Interface, ns, name string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := dyn.Resource(sandboxes).Namespace(ns)
	w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	sb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandbox.roboco.io/v1alpha1", "kind": "Sandbox",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"agentID":  name + "-" + runID,
			"owner":    map[string]any{"policy": "None"},
			"services": []any{map[string]any{"engine": "postgres"}, map[string]any{"engine": "redis"}},
		},
	}}
	start := time.Now()
	if _, err := res.Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	for ev := range w.ResultChan() {
		switch {
		case ev.Type == watch.Error:
			t.Fatalf("watching %s: %v", name, ev.Object)
		case ev.Type == watch.Deleted && took == 0:
			t.Fatalf("%s was deleted before it was Ready", name)
		case ev.Type == watch.Deleted:
			return took
		case took == 0 && isReady(ev.Object.(*unstructured.Unstructured)):
			took = time.Since(start)
			if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatalf("the watch of %s ended (Ready after %s)", name, took)
	return 0
}

func isReady(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

var tcbenchReady = regexp.MustCompile(`(?m)^tcbench: ready_ms=(\d+)`)

// runTCBench runs hack/tcbench once: its own time from its first create to both
// ready, and the whole process's.
func runTCBench(t *testing.T, bin string) (ready, process time.Duration) {
	t.Helper()
	t.Cleanup(func() {
		_ = exec.Command("sh", "-c", "docker ps -aq --filter label="+testLabel+"=tcbench | xargs -r docker rm -fv").Run()
	})
	cmd := exec.Command(bin, "-postgres-image", images.Plain["postgres"], "-redis-image", images.Plain["redis"])
	cmd.Env = append(os.Environ(), "TESTCONTAINERS_RYUK_DISABLED=true")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	process = time.Since(start)
	m := tcbenchReady.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("tcbench: %v\n%s%s", err, out, tail(stderr.String(), 20))
	}
	n, _ := strconv.Atoi(string(m[1]))
	return time.Duration(n) * time.Millisecond, process
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// buildTCBench builds hack/tcbench (a module of its own) once per content of its
// sources and the Go toolchain, into bin/tcbench/<key>/.
func buildTCBench(t *testing.T) string {
	t.Helper()
	src := filepath.Join(testenv.Root(), "hack", "tcbench")
	files, err := filepath.Glob(filepath.Join(src, "*"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	_, _ = io.WriteString(h, runtime.Version())
	for _, f := range files { // sorted by Glob
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		_, _ = h.Write(b)
	}
	bin := filepath.Join(testenv.Root(), "bin", "tcbench", hex.EncodeToString(h.Sum(nil))[:16], "tcbench")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	tmp := bin + ".tmp"
	build := exec.Command("go", "build", "-buildvcs=false", "-o", tmp, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building hack/tcbench: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
