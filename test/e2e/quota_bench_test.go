package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchQuotaBurst: 100 Sandboxes created at once in a namespace whose
// SandboxQuota admits 10. The Docker host never holds more than 10 of their
// containers (sampled with docker ps throughout, and the creates counted at a
// proxy in front of the engine), the other 90 say QuotaExceeded; deleting 5
// admits 5 others, timed from the deletes to their admission and to Ready.
func TestBenchQuotaBurst(t *testing.T) {
	testenv.BenchOnly(t)
	const n, hard, freed = 100, 10, 5
	calls := testenv.CountDockerCalls(t, dockerDaemon())
	startManager(t, "--docker-host", calls.Host)
	ns := newNamespace(t, "bench-quota")
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "namespace", ns, "--wait=false") })
	applyYAML(t, ns, fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: SandboxQuota\nmetadata: {name: team}\nspec:\n  hard: {sandboxes: %d}\n", hard))
	t.Logf("load average at start: %s", loadAvg())

	stop := sampleContainers(t, "sandbox.roboco.io/namespace="+ns)
	var docs []string
	for i := range n {
		docs = append(docs, sandboxYAML(fmt.Sprintf("q%03d", i), fmt.Sprintf("q%03d-%s", i, runID), "{policy: None}", "[{engine: redis}]"))
	}
	calls.Reset()
	start := time.Now()
	applyYAML(t, ns, strings.Join(docs, "---\n"))
	var counts map[string][]string
	testenv.WaitFor(t, 5*time.Minute, time.Second, "10 Ready and 90 QuotaExceeded", func() bool {
		counts = readyReasons(t, ns)
		return len(counts["Ready"]) == hard && len(counts["QuotaExceeded"]) == n-hard
	})
	settled := time.Since(start)
	creates := calls.Snapshot()["POST /containers/create"]

	deleted := time.Now()
	kubectl(t, append([]string{"delete", "-n", ns, "--wait=false"}, prefixed("sandbox/", counts["Ready"][:freed])...)...)
	var admitted time.Duration
	first := map[string]bool{}
	for _, name := range counts["Ready"] {
		first[name] = true
	}
	// Note: the quota alone first (one small read per look), so its figure is not
	// the period of a heavier poll.
	testenv.WaitFor(t, 3*time.Minute, 50*time.Millisecond, "5 more admitted", func() bool {
		return len(newlyAdmitted(t, ns, first)) == freed
	})
	admitted = time.Since(deleted)
	testenv.WaitFor(t, 3*time.Minute, 100*time.Millisecond, "5 more Ready", func() bool {
		now := readyReasons(t, ns)
		return len(now["Ready"]) == hard && len(now["QuotaExceeded"]) == n-hard-freed
	})
	readyAgain := time.Since(deleted)
	time.Sleep(2 * time.Second)
	most := stop()
	totalCreates := calls.Snapshot()["POST /containers/create"]
	t.Logf("%d Sandboxes at once under sandboxes=%d: %d Ready and %d QuotaExceeded after %s; at most %d of their containers on the host at once (docker ps every 100 ms), %d container creates for the first %d",
		n, hard, hard, n-hard, ms(settled), most, creates, hard)
	t.Logf("deleting %d: the next %d admitted (in the quota's status.admitted) within %s, Ready within %s (container creates in all: %d); load average at end: %s",
		freed, freed, ms(admitted), ms(readyAgain), totalCreates, loadAvg())
	if most > hard {
		t.Errorf("the host held %d containers of the namespace at once, over the quota's %d", most, hard)
	}
}

// sampleContainers counts, every 100 ms until stop, the containers carrying
// label; stop returns the most seen at once.
func sampleContainers(t *testing.T, label string) (stop func() int) {
	t.Helper()
	var mu sync.Mutex
	most, done := 0, make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
			if err != nil {
				continue
			}
			mu.Lock()
			most = max(most, len(strings.Fields(string(out))))
			mu.Unlock()
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

// readyReasons lists ns's Sandboxes by their Ready condition's reason.
func readyReasons(t *testing.T, ns string) map[string][]string {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				Conditions []struct{ Type, Reason string } `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, "get", "sandboxes", "-n", ns, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, sb := range list.Items {
		for _, c := range sb.Status.Conditions {
			if c.Type == "Ready" {
				out[c.Reason] = append(out[c.Reason], sb.Metadata.Name)
			}
		}
	}
	return out
}

// newlyAdmitted lists the Sandboxes the quota team of ns admits that are not in before.
func newlyAdmitted(t *testing.T, ns string, before map[string]bool) []string {
	t.Helper()
	var out []string
	for _, name := range strings.Fields(kubectl(t, "get", "sandboxquota", "team", "-n", ns, "-o", "jsonpath={.status.admitted[*].name}")) {
		if !before[name] {
			out = append(out, name)
		}
	}
	return out
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
