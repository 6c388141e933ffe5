package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
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
// SANDBOX_BENCH_BASELINE_MANAGER names another manager binary (e.g. built from
// main) measured the same way in the same rounds: a change's before and after.
func TestBenchColdPath(t *testing.T) {
	testenv.BenchOnly(t)
	rounds := 10
	if n, err := strconv.Atoi(os.Getenv("SANDBOX_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	tc := buildTCBench(t)
	ns := newNamespace(t, "bench-cold")
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)

	// One manager at a time: two would both reconcile every Sandbox.
	withManager := func(bin, name string) func() (time.Duration, bool) {
		return func() (time.Duration, bool) {
			m := startBinary(t, bin, nil)
			defer m.stop()
			return coldSandbox(t, dyn, ns, name), true
		}
	}
	sides := []*benchSide{{name: "ours"}, {name: "testcontainers-go"}}
	baseline := os.Getenv("SANDBOX_BENCH_BASELINE_MANAGER")
	if baseline != "" {
		sides = append(sides, &benchSide{name: "baseline manager"})
	}
	var tcProcess []time.Duration
	for round := range rounds {
		sides[0].run = withManager(filepath.Join(binDir, "manager"), fmt.Sprintf("cold-%d", round))
		sides[1].run = func() (time.Duration, bool) {
			in, process, ok := runTCBench(t, tc)
			tcProcess = append(tcProcess, process)
			return in, ok
		}
		if baseline != "" {
			sides[2].run = withManager(baseline, fmt.Sprintf("cold-base-%d", round))
		}
		// Each side goes first in turn: none always starts on a machine another has
		// just warmed (or left busy removing its containers).
		for i := range sides {
			sides[(round+i)%len(sides)].measure()
		}
	}
	ours, theirs := sides[0], sides[1]
	t.Logf("cold postgres+redis, %d rounds interleaved:", rounds)
	t.Logf("  ours, client-go create → watch sees Ready: %s", ours)
	t.Logf("  testcontainers-go v0.45, first create → both probes passed: %s", theirs)
	t.Logf("  testcontainers-go, whole process (start, Docker connection, removal): median %s", testenv.Median(tcProcess).Round(time.Millisecond))
	t.Logf("  ours / testcontainers-go: medians %.2f, worsts %.2f, median of the rounds' ratios %.2f",
		ours.median()/theirs.median(), ours.worst()/theirs.worst(), ours.pairedRatio(theirs))
	if baseline != "" {
		base := sides[2]
		t.Logf("  baseline manager %s: %s", baseline, base)
		t.Logf("  ours / baseline: medians %.2f, worsts %.2f, median of the rounds' ratios %.2f; baseline / testcontainers-go: medians %.2f, rounds %.2f",
			ours.median()/base.median(), ours.worst()/base.worst(), ours.pairedRatio(base), base.median()/theirs.median(), base.pairedRatio(theirs))
	}
}

// benchSide is one contender of a benchmark and what it measured.
type benchSide struct {
	name string
	run  func() (time.Duration, bool)
	took []time.Duration
	// byRound holds every round's time, 0 where it failed.
	byRound []time.Duration
	failed  int
}

func (s *benchSide) measure() {
	d, ok := s.run()
	if !ok {
		s.failed++
		d = 0
	} else {
		s.took = append(s.took, d)
	}
	s.byRound = append(s.byRound, d)
}

// pairedRatio is the median over the rounds both sides measured of s's time over
// o's: a round's two samples are minutes apart at most, so a load that comes and
// goes over the run weighs less than in the ratio of the medians.
func (s *benchSide) pairedRatio(o *benchSide) float64 {
	var ratios []float64
	for i := range min(len(s.byRound), len(o.byRound)) {
		if s.byRound[i] > 0 && o.byRound[i] > 0 {
			ratios = append(ratios, s.byRound[i].Seconds()/o.byRound[i].Seconds())
		}
	}
	if len(ratios) == 0 {
		return math.NaN()
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}

func (s *benchSide) median() float64 {
	if len(s.took) == 0 {
		return math.NaN()
	}
	return testenv.Median(s.took).Seconds()
}

func (s *benchSide) worst() float64 {
	if len(s.took) == 0 {
		return math.NaN()
	}
	return slices.Max(s.took).Seconds()
}

func (s *benchSide) String() string {
	if len(s.took) == 0 {
		return fmt.Sprintf("no sample, failed %d", s.failed)
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("median %s, p99 (the worst of %d) %s, failed %d; all %v",
		ms(testenv.Median(s.took)), len(s.took), ms(slices.Max(s.took)), s.failed, s.took)
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
// ready, and the whole process's; a run that failed is logged, not fatal (an
// initdb past its 2 minutes on a machine under load).
func runTCBench(t *testing.T, bin string) (ready, process time.Duration, ok bool) {
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
		t.Logf("tcbench failed: %v\n%s%s", err, out, tail(stderr.String(), 20))
		return 0, process, false
	}
	n, _ := strconv.Atoi(string(m[1]))
	return time.Duration(n) * time.Millisecond, process, true
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
