package e2e

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// releaseBeforeAdmission is the release before issue 37's admission on every
// growth (the parent of bae0b39): a quota was a ledger of admitted objects.
const releaseBeforeAdmission = "f51fb69"

// afterReady is how long after a claim's Ready its writes are still counted
// as the claim's (the quota's recount, the pools' refill passes).
const afterReady = 5 * time.Second

// TestBenchQuotaClaim measures claims of a postgres+redis Sandbox from warm
// pools of 5 in a namespace with a SandboxQuota (generous hard limits), before
// and after admission on every growth: the release before (built here from a
// worktree of its commit) and today's manager, each on a control plane of its
// own with its release's CRDs, beside today's in a namespace without a quota.
// SANDBOX_BENCH_CLAIMS (default 15) claims per side, in rounds each side goes
// first in turn, every claim on settled pools and a settled machine, on the
// orchestrator's clock (client-go create → its watch sees Ready at the current
// generation). Each control plane's API server logs the writes it answers
// (audit log): the manager's writes are tallied per claim, by resource, up to
// Ready and in the afterReady that follows.
func TestBenchQuotaClaim(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_CLAIMS", 15)
	prevBin, prevCRDs := buildRelease(t, releaseBeforeAdmission)
	prevPlane := startAuditedPlane(t, prevCRDs)
	curPlane := startAuditedPlane(t, filepath.Join(testenv.Root(), "config", "crd", "bases"))
	prevInstance := instance + "-prev"
	t.Cleanup(func() { removeInstance(prevInstance) })
	startBinary(t, prevBin, nil, "--kubeconfig", prevPlane.Kubeconfig(), "--instance", prevInstance)
	startManager(t, "--kubeconfig", curPlane.Kubeconfig())
	sides := []*quotaSide{
		newQuotaSide(t, "before ("+releaseBeforeAdmission+"), quota", prevPlane, filepath.Base(prevBin), "qb", true),
		newQuotaSide(t, "after, quota", curPlane, "manager", "qa", true),
		newQuotaSide(t, "after, no quota", curPlane, "manager", "qn", false),
	}
	t.Logf("load average at start: %s", loadAvg())
	for i := range n {
		for k := range sides {
			for _, s := range sides {
				s.b.waitFull(3 * time.Minute)
			}
			settle(t, 20*time.Second)
			sides[(i+k)%len(sides)].claim(t, i)
		}
	}
	for _, s := range sides {
		s.b.waitFull(3 * time.Minute)
	}
	reportQuotaClaims(t, n, sides)
}

// quotaSide is one kind of claim: a manager, its control plane, its namespace
// (with a quota or not) and pools, and what its claims took.
type quotaSide struct {
	label, prefix string
	plane         *auditedPlane
	agent         string // the manager's program name, as its user agent starts
	quota         bool
	b             *poolBench
	took          []time.Duration
	toReady       tally
	after         tally
}

// newQuotaSide makes the side's namespace, its SandboxQuota when quota (seen
// by the manager before the pools are made, so that they are admitted too)
// and its pools of 5.
func newQuotaSide(t *testing.T, label string, p *auditedPlane, agent, prefix string, quota bool) *quotaSide {
	t.Helper()
	s := &quotaSide{label: label, prefix: prefix, plane: p, agent: agent, quota: quota, toReady: tally{}, after: tally{}}
	ns := "bench-quota-claim-" + prefix + "-" + runID
	p.MustKubectl(t, "create", "namespace", ns)
	if quota {
		f := filepath.Join(t.TempDir(), "quota.yaml")
		q := "apiVersion: sandbox.roboco.io/v1alpha1\nkind: SandboxQuota\nmetadata: {name: team}\nspec:\n  hard: {sandboxes: 1000, poolMembers: 1000, memory: 1000Gi}\n"
		if err := os.WriteFile(f, []byte(q), 0o600); err != nil {
			t.Fatal(err)
		}
		p.MustKubectl(t, "apply", "-n", ns, "-f", f)
		testenv.WaitFor(t, 2*time.Minute, poll, label+": the quota recounted", func() bool {
			return s.quotaSummary(t, ns) != ""
		})
	}
	s.b = poolBenchIn(t, p.Env, ns, 5, "postgres", "redis")
	return s
}

func (s *quotaSide) quotaSummary(t *testing.T, ns string) string {
	t.Helper()
	return s.plane.MustKubectl(t, "get", "sandboxquota", "team", "-n", ns, "-o", "jsonpath={.status.summary}")
}

// claim creates the side's i-th Sandbox, times it to Ready and tallies the
// manager's writes up to Ready and within afterReady.
func (s *quotaSide) claim(t *testing.T, i int) {
	t.Helper()
	took := s.b.createReady(s.b.sandbox(fmt.Sprintf("%s-%d", s.prefix, i), false))
	s.b.claimed++
	ready := s.b.started.Add(took)
	time.Sleep(afterReady) // the window counted, not a wait for a state
	ws := s.plane.writes(t)
	s.toReady.add(ws, s.agent, s.b.ns, s.b.started, ready)
	s.after.add(ws, s.agent, s.b.ns, ready, ready.Add(afterReady))
	s.took = append(s.took, took)
}

// p99 is the 99th percentile of ds, or its worst with fewer than 100.
func p99(ds []time.Duration) time.Duration {
	if len(ds) < 100 {
		return slices.Max(ds)
	}
	return slices.Sorted(slices.Values(ds))[len(ds)*99/100]
}

func reportQuotaClaims(t *testing.T, n int, sides []*quotaSide) {
	t.Logf("postgres+redis claims from pools of 5: %d per side, in rounds each side first in turn; load average at end: %s", n, loadAvg())
	for _, s := range sides {
		hits, misses := s.b.claimResults()
		quota := "no quota"
		if s.quota {
			quota = "quota " + s.quotaSummary(t, s.b.ns)
		}
		t.Logf("  %s (%s; %d hits, %d misses), client-go create → watch sees Ready: %s", s.label, quota, hits, misses, stats(s.took))
	}
	tail := "p99"
	if n < 100 {
		tail = "max (p99 of fewer than 100)"
	}
	ratio := func(a, b *quotaSide) string {
		return fmt.Sprintf("p50 ×%.2f, %s ×%.2f", testenv.Median(a.took).Seconds()/testenv.Median(b.took).Seconds(), tail,
			p99(a.took).Seconds()/p99(b.took).Seconds())
	}
	t.Logf("  %s / %s: %s", sides[1].label, sides[0].label, ratio(sides[1], sides[0]))
	t.Logf("  %s / %s: %s", sides[1].label, sides[2].label, ratio(sides[1], sides[2]))
	writesTable(t, n, sides, "up to Ready", func(s *quotaSide) tally { return s.toReady })
	writesTable(t, n, sides, fmt.Sprintf("in the %s after Ready", afterReady), func(s *quotaSide) tally { return s.after })
	var parts []string
	per := func(k int) float64 { return float64(k) / float64(n) }
	for _, s := range sides[:2] {
		parts = append(parts, fmt.Sprintf("%s %.2f up to Ready + %.2f after (of which conflicts %.2f + %.2f)", s.label,
			per(s.toReady.of("sandboxquotas", "")), per(s.after.of("sandboxquotas", "")),
			per(s.toReady.of("sandboxquotas", conflict)), per(s.after.of("sandboxquotas", conflict))))
	}
	t.Logf("  SandboxQuota writes per claim: %s", strings.Join(parts, "; "))
	quotaWrites := func(s *quotaSide) float64 {
		return per(s.toReady.of("sandboxquotas", "") + s.after.of("sandboxquotas", ""))
	}
	verdict := "adds no SandboxQuota write to a claim"
	if extra := quotaWrites(sides[1]) - quotaWrites(sides[0]); extra > 0 {
		verdict = fmt.Sprintf("ADDS %.2f SandboxQuota writes per claim", extra)
	}
	t.Logf("  admission on every growth %s (%.2f after, %.2f before, up to %s after Ready)", verdict, quotaWrites(sides[1]), quotaWrites(sides[0]), afterReady)
	parts = nil
	for _, s := range sides {
		parts = append(parts, fmt.Sprintf("%s %.2f", s.label, per(s.toReady.of("", "")-s.toReady.of("elsewhere", "")+s.after.of("", "")-s.after.of("elsewhere", ""))))
	}
	t.Logf("  all the manager's writes in the namespace per claim, up to %s after Ready: %s", afterReady, strings.Join(parts, "; "))
}

// writesTable logs the manager's writes per claim of each side, by resource
// and verb, one line each (make bench keeps only lines naming the file).
func writesTable(t *testing.T, n int, sides []*quotaSide, when string, of func(*quotaSide) tally) {
	keys := map[string]bool{}
	head := fmt.Sprintf("  the manager's API writes per claim %s (audit log of each API server), by resource:", when)
	for _, s := range sides {
		head += fmt.Sprintf(" %s |", s.label)
		for k := range of(s) {
			keys[k] = true
		}
	}
	lines := []string{}
	total := make([]int, len(sides))
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		row := fmt.Sprintf("    %-55s", k)
		for i, s := range sides {
			row += fmt.Sprintf(" %6.2f", float64(of(s)[k])/float64(n))
			if !strings.HasPrefix(k, "elsewhere") {
				total[i] += of(s)[k]
			}
		}
		lines = append(lines, row)
	}
	row := fmt.Sprintf("    %-55s", "in the namespace, all")
	for i := range sides {
		row += fmt.Sprintf(" %6.2f", float64(total[i])/float64(n))
	}
	logLines(t, strings.TrimSuffix(head, " |"), append(lines, row))
}

// removeInstance removes whatever containers a manager of instance left.
func removeInstance(instance string) {
	_ = exec.Command("sh", "-c", "docker ps -aq --filter label=sandbox.roboco.io/instance="+instance+" | xargs -r docker rm -fv").Run()
}
