package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchTenantSecrets measures what a tenant's Secrets cost the manager: 40
// Secrets of 1 MiB, labelled as the manager's own (any editor of a namespace can
// write them), against the manager's resident memory just before them (same
// run). The manager watches those Secrets as metadata only.
func TestBenchTenantSecrets(t *testing.T) {
	testenv.BenchOnly(t)
	const n, window = 40, 20 * time.Second
	m := startManager(t)
	ns := newNamespace(t, "bench-tenant-secrets")
	time.Sleep(5 * time.Second)
	_, base := idle(t, m, window)

	payload := filepath.Join(t.TempDir(), "blob")
	b := make([]byte, 1<<20)
	_, _ = rand.Read(b)
	if err := os.WriteFile(payload, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("tenant-%d", i)
		kubectl(t, "create", "secret", "generic", "-n", ns, name, "--from-file=blob="+payload)
		kubectl(t, "label", "secret", "-n", ns, name, "sandbox.roboco.io/sandbox=x")
	}
	peak := base
	for start := time.Now(); time.Since(start) < window; time.Sleep(time.Second) {
		_, rss := procStats(t, m.cmd.Process.Pid)
		peak = max(peak, float64(rss)/1024)
	}
	t.Logf("manager resident memory: %.1f MiB before, %.1f MiB at most within %s after %d labelled 1 MiB Secrets in one namespace (+%.1f MiB)",
		base, peak, window, n, peak-base)
	kubectl(t, "delete", "namespace", ns, "--wait=false")
}
