package e2e

import (
	"encoding/base64"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// Tenant payloads of TestBenchTenantPayloads: ConfigMaps with large
// annotations, and Secrets labelled as the manager's own applied with
// client-side kubectl apply (which copies their data into an annotation).
const (
	payloadConfigMaps  = 300
	payloadAnnotation  = 190 << 10
	payloadSecrets     = 40
	payloadSecretBytes = 128 << 10
	// heapTarget is the most a tenant's payloads may grow the manager's heap.
	heapTarget = 15 << 20
)

// TestBenchTenantPayloads measures what a tenant's payloads cost the manager:
// 300 ConfigMaps with 190 KiB annotations and 40 Secrets of 128 KiB labelled
// as the manager's own, applied with kubectl apply (any editor of a namespace
// can write them). The manager's heap in use (go_memstats_heap_inuse_bytes)
// is sampled before them and for two minutes after the last: the least of each
// window is the heap after a collection (Go collects at least every two
// minutes). Target: < 15 MiB of growth.
func TestBenchTenantPayloads(t *testing.T) {
	testenv.BenchOnly(t)
	const window = 130 * time.Second
	addr := startManagerWithMetrics(t)
	ns := newNamespace(t, "bench-tenant-payloads")
	base := leastHeap(t, addr, window)

	dir := t.TempDir()
	writeManifest(t, filepath.Join(dir, "configmaps.yaml"), payloadConfigMaps, func(i int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-%d\n  annotations: {tenant/blob: %q}\ndata: {README.md: hello}\n",
			i, strings.Repeat("x", payloadAnnotation))
	})
	blob := base64.StdEncoding.EncodeToString(make([]byte, payloadSecretBytes))
	writeManifest(t, filepath.Join(dir, "secrets.yaml"), payloadSecrets, func(i int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: tenant-%d\n  labels: {sandbox.roboco.io/sandbox: x}\ndata: {blob: %s}\n", i, blob)
	})
	kubectl(t, "create", "-n", ns, "-f", filepath.Join(dir, "configmaps.yaml"))
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(dir, "secrets.yaml"))
	after := leastHeap(t, addr, window)
	verdict := "met"
	if after-base >= heapTarget {
		verdict = "MISSED"
	}
	t.Logf("manager heap in use after a collection: %.1f MiB before, %.1f MiB within %s after %d ConfigMaps with %d KiB annotations and %d labelled %d KiB Secrets applied with kubectl apply: +%.1f MiB (target < %d MiB: %s); load average %s",
		mib(base), mib(after), window, payloadConfigMaps, payloadAnnotation>>10, payloadSecrets, payloadSecretBytes>>10,
		mib(after-base), heapTarget>>20, verdict, loadAvg())
	kubectl(t, "delete", "namespace", ns, "--wait=false")
}

// writeManifest writes n documents of doc into path.
func writeManifest(t *testing.T, path string, n int, doc func(int) string) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		b.WriteString("---\n")
		b.WriteString(doc(i))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// leastHeap is the least heap in use the manager at addr reports, sampled
// every second for window.
func leastHeap(t *testing.T, addr string, window time.Duration) float64 {
	t.Helper()
	least := math.Inf(1)
	for start := time.Now(); time.Since(start) < window; time.Sleep(time.Second) {
		least = min(least, heapInUse(t, addr))
	}
	return least
}

// heapInUse is go_memstats_heap_inuse_bytes of the manager at addr.
func heapInUse(t *testing.T, addr string) float64 {
	t.Helper()
	for _, line := range strings.Split(metricsText(t, addr), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatal("the manager reports no go_memstats_heap_inuse_bytes")
	return 0
}

func mib(b float64) float64 { return b / (1 << 20) }
